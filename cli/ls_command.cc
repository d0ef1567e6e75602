#include "cli/ls_command.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command_preamble.h"

namespace shefl {
namespace {

namespace fs = std::filesystem;

// Below DIR, run folders hold their own subfolders (logs/, checkpoints/):
// the walk does not go into them.
void Walk(const fs::path& dir, int depth, std::vector<std::string>* out) {
  std::error_code ec;
  std::vector<fs::path> children;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_directory(ec)) children.push_back(e.path());
  for (const fs::path& child : children) {
    if (CheckRunFolder(child.string()).ok()) out->push_back(child.string());
    else if (depth > 1) Walk(child, depth - 1, out);
  }
}

std::string Percent(const std::optional<double>& a) {
  return a ? absl::StrFormat("%.1f%%", 100 * *a) : "-";
}

std::string Rounds(const RunInfo& r) {
  return r.rounds_planned > 0 ? absl::StrCat(r.rounds_done, "/", r.rounds_planned)
                              : absl::StrCat(r.rounds_done);
}

std::string Shown(const std::string& dir) {
  return fs::path(dir).lexically_normal().string();
}

// A run's path below the folder listed; the path itself when it is that
// folder (`shefl ls RUN_DIR`).
std::string Below(const std::string& dir, const std::string& under) {
  const fs::path rel = fs::path(dir).lexically_normal().lexically_relative(
      fs::path(under).lexically_normal());
  return rel.empty() || rel == "." || *rel.begin() == ".." ? Shown(dir) : rel.string();
}

struct ParsedLs {
  std::string dir = "results";
  bool json = false;
};

absl::StatusOr<ParsedLs> Parse(const std::vector<std::string>& args) {
  ParsedLs p;
  bool dir_given = false;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--json") {
      p.json = true;
    } else if (args[i].rfind("-", 0) == 0) {
      return absl::InvalidArgumentError("unknown flag for ls: " + args[i]);
    } else if (dir_given) {
      return absl::InvalidArgumentError("ls takes one DIR, got a second: '" +
                                        args[i] + "'");
    } else {
      p.dir = args[i];
      dir_given = true;
    }
  }
  return p;
}

}  // namespace

std::string LsUsage() {
  return "usage: shefl ls [DIR] [--json]\n"
         "\n"
         "Lists the run folders under DIR (default results/, where `shefl run`\n"
         "makes them; DIR may be a run folder itself): one line per run with\n"
         "its method, state, rounds done of planned, best accuracy so far,\n"
         "start and wall time. A run folder holds config.yaml and rounds.jsonl\n"
         "or endpoints.json. The state:\n"
         "  running    its coordinator (endpoints.json) is alive\n"
         "  finished   summary.json is there and has every planned round\n"
         "  stopped    stopped cleanly before the last round (summary.json)\n"
         "  resumable  the coordinator died after a checkpoint\n"
         "  crashed    the coordinator died before its first checkpoint\n"
         "  failed     shefl run ended it on an error (RUN_DIR/failure.txt)\n"
         "Stopped and resumable runs go on with `shefl run --resume RUN_DIR`.\n"
         "  --json     a JSON array of the same, for scripts\n";
}

std::vector<std::string> FindRunFolders(const std::string& dir) {
  if (CheckRunFolder(dir).ok()) return {dir};
  std::vector<std::string> out;
  Walk(dir, 3, &out);
  std::sort(out.begin(), out.end());
  return out;
}

std::string FormatRunsTable(const std::vector<RunInfo>& runs,
                            const std::string& under) {
  const std::vector<std::string> head = {"run",    "method",  "state", "rounds",
                                         "best acc", "started", "wall"};
  std::vector<std::vector<std::string>> rows = {head};
  for (const RunInfo& r : runs)
    rows.push_back({Below(r.dir, under), r.method, RunStateName(r.state), Rounds(r),
                    Percent(r.best_accuracy), FormatStarted(r.started),
                    FormatWall(r.wall_seconds)});
  std::vector<size_t> width(head.size(), 0);
  for (const auto& row : rows)
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      // Text columns flush left, figures (rounds, accuracy) right.
      const bool right = c == 3 || c == 4;
      const int w = static_cast<int>(width[c]);
      absl::StrAppend(&line, c ? "  " : "",
                      right ? absl::StrFormat("%*s", w, row[c])
                            : absl::StrFormat("%-*s", w, row[c]));
    }
    line.erase(line.find_last_not_of(' ') + 1);
    absl::StrAppend(&out, line, "\n");
  }
  return out;
}

nlohmann::json RunsToJson(const std::vector<RunInfo>& runs) {
  nlohmann::json out = nlohmann::json::array();
  for (const RunInfo& r : runs) {
    const bool live = r.state == RunState::kRunning && r.endpoints;
    out.push_back(
        {{"dir", Shown(r.dir)},
         {"name", r.name},
         {"method", r.method},
         {"state", RunStateName(r.state)},
         {"resumable", r.state == RunState::kStopped || r.state == RunState::kResumable},
         {"rounds_done", r.rounds_done},
         {"rounds_planned", r.rounds_planned},
         {"best_accuracy", r.best_accuracy ? nlohmann::json(*r.best_accuracy) : nullptr},
         {"started", r.started ? nlohmann::json(static_cast<int64_t>(*r.started)) : nullptr},
         {"wall_seconds", r.wall_seconds},
         {"coordinator_pid", live ? nlohmann::json(r.endpoints->coordinator_pid) : nullptr}});
  }
  return out;
}

namespace {

// The listing `shefl ls` prints; exit 1 when p.dir is no folder.
int List(const ParsedLs& p) {
  std::error_code ec;
  if (!fs::is_directory(p.dir, ec)) {
    std::cerr << "shefl ls: no folder " << p.dir
              << (p.dir == "results" ? " here (`shefl run` makes run folders "
                                       "there; name another DIR)"
                                     : "")
              << "\n";
    return 1;
  }
  std::vector<RunInfo> runs;
  for (const std::string& dir : FindRunFolders(p.dir))
    if (absl::StatusOr<RunInfo> r = ReadRunInfo(dir); r.ok()) runs.push_back(*r);
  if (p.json) {
    std::cout << RunsToJson(runs).dump(2) << "\n";
  } else if (runs.empty()) {
    std::cerr << "shefl ls: no run folders under " << p.dir << "\n";
  } else {
    std::cout << FormatRunsTable(runs, p.dir);
  }
  return 0;
}

}  // namespace

int LsCommand(const std::vector<std::string>& args) {
  return RunCommand(args, "ls", LsUsage(), Parse, List);
}

}  // namespace shefl
