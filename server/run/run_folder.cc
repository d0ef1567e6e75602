#include "server/run/run_folder.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/core/config.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"

namespace shefl {

namespace {

// "a:\n  b: 1\n" -> {"a.b": "1"}: ConfigToYaml writes one key a line, two
// spaces an indent, scalars (and flow lists) after ": ".
std::map<std::string, std::string> Flatten(const std::string& yaml) {
  std::map<std::string, std::string> out;
  std::vector<std::string> parents;
  std::istringstream in(yaml);
  for (std::string line; std::getline(in, line);) {
    const size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos || line[indent] == '#') continue;
    const size_t colon = line.find(':', indent);
    if (colon == std::string::npos) continue;
    parents.resize(indent / 2);
    const std::string key = line.substr(indent, colon - indent);
    std::string value = colon + 1 < line.size() ? line.substr(colon + 1) : "";
    if (!value.empty() && value[0] == ' ') value.erase(0, 1);
    if (value.empty()) {
      parents.push_back(key);
      continue;
    }
    std::string path;
    for (const std::string& p : parents) absl::StrAppend(&path, p, ".");
    out[path + key] = value;
  }
  return out;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

bool HoldsRun(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir + "/checkpoints/latest.ckpt", ec)) return true;
  return std::filesystem::file_size(dir + "/rounds.jsonl", ec) > 0 && !ec;
}

std::vector<std::string> ConfigChanges(const std::string& before_yaml,
                                       const std::string& after_yaml) {
  const auto a = Flatten(before_yaml), b = Flatten(after_yaml);
  std::map<std::string, std::pair<std::string, std::string>> keys;
  for (const auto& [k, v] : a) keys[k].first = v;
  for (const auto& [k, v] : b) keys[k].second = v;
  std::vector<std::string> changes;
  for (const auto& [k, v] : keys) {
    if (k == "out_dir" || v.first == v.second) continue;
    changes.push_back(absl::StrCat(k, ": ", v.first.empty() ? "(none)" : v.first,
                                   " -> ", v.second.empty() ? "(none)" : v.second));
  }
  return changes;
}

absl::Status ChooseStart(CoordinatorOptions* o) {
  if (!o->resume_dir.empty()) return absl::OkStatus();
  SHEFL_ASSIGN_OR_RETURN(auto config, LoadConfig(o->config_path, o->overrides));
  const std::string dir = !o->out_dir.empty()      ? o->out_dir
                          : !config.out_dir.empty() ? config.out_dir
                                                     : std::string();
  if (dir.empty() || !HoldsRun(dir)) return absl::OkStatus();
  if (!o->continue_run)
    return absl::FailedPreconditionError(absl::StrCat(
        "--out '", dir, "' already holds a run; continue it with --resume ",
        dir, " (or --continue), or give another --out for a new run"));
  config.out_dir = dir;
  const std::vector<std::string> changes =
      ConfigChanges(ReadAll(dir + "/config.yaml"), ConfigToYaml(config));
  if (!changes.empty())
    return absl::FailedPreconditionError(absl::StrCat(
        "--continue: '", dir, "' holds a run of another config (",
        absl::StrJoin(changes, "; "),
        "). For a new run give another --out (or move that folder away); "
        "to go on with the old run under a change, --resume ", dir,
        " --set KEY=VALUE"));
  o->resume_dir = dir;
  o->overrides.clear();
  return absl::OkStatus();
}

}  // namespace shefl
