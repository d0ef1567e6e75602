#include "cli/report_outputs.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/core/status_macros.h"

namespace shefl {
namespace {

double Num(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

// One data file per run: round, accuracy, cumulative MB up, MB up of the
// round by HPC and by LPC.
absl::Status WriteData(const std::string& run_dir, const std::string& path) {
  std::ifstream in(run_dir + "/rounds.jsonl");
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", run_dir, "/rounds.jsonl"));
  std::ofstream out(path);
  double cumulative = 0;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    cumulative += Num(j, "bytes_up") / 1e6;
    const nlohmann::json tiers = j.value("bytes_up_by_tier", nlohmann::json::object());
    out << Num(j, "round") << " " << Num(j, "ensemble_accuracy") << " " << cumulative
        << " " << Num(tiers, "hpc") / 1e6 << " " << Num(tiers, "lpc") / 1e6 << "\n";
  }
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

std::string Quoted(const std::string& s) {
  return "'" + absl::StrReplaceAll(s, {{"'", "''"}}) + "'";
}

// plot clause: one `using` per run, titled by its name.
std::string Lines(const std::vector<std::string>& data, const std::vector<std::string>& names,
                  const std::string& columns, const std::string& suffix = "") {
  std::string out;
  for (size_t i = 0; i < data.size(); ++i)
    absl::StrAppend(&out, i ? ", " : "", Quoted(data[i]), " using ", columns,
                    " with linespoints title ", Quoted(names[i] + suffix));
  return out;
}

absl::Status RunGnuplot(const std::string& script) {
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError("cannot fork gnuplot");
  if (pid == 0) {
    ::execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return absl::NotFoundError("gnuplot not found (Debian package gnuplot-nox)");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return absl::InternalError(absl::StrCat("gnuplot failed on ", script));
  return absl::OkStatus();
}

}  // namespace

absl::Status WritePlots(const std::vector<std::string>& run_dirs,
                        const std::vector<std::string>& names,
                        const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir + "/data", ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", out_dir, ": ", ec.message()));
  std::vector<std::string> data;
  for (size_t i = 0; i < run_dirs.size(); ++i) {
    data.push_back(absl::StrCat(out_dir, "/data/run", i, ".dat"));
    SHEFL_RETURN_IF_ERROR(WriteData(run_dirs[i], data.back()));
  }
  const std::string png = "set terminal pngcairo size 900,560\nset grid\nset key bottom right\n";
  std::string script = png;
  absl::StrAppend(&script, "set output ", Quoted(out_dir + "/accuracy_vs_round.png"), "\n",
                  "set xlabel 'round'\nset ylabel 'ensemble accuracy'\n",
                  "plot ", Lines(data, names, "1:2"), "\n");
  absl::StrAppend(&script, "set output ", Quoted(out_dir + "/accuracy_vs_bytes.png"), "\n",
                  "set xlabel 'cumulative MB uploaded'\n",
                  "plot ", Lines(data, names, "3:2"), "\n");
  absl::StrAppend(&script, "set output ", Quoted(out_dir + "/bytes_per_round.png"), "\n",
                  "set key top right\nset xlabel 'round'\nset ylabel 'MB uploaded'\n",
                  "set yrange [0:*]\n",
                  "plot ", Lines(data, names, "1:4", " HPC"), ", ",
                  Lines(data, names, "1:5", " LPC"), "\n");
  const std::string path = out_dir + "/plots.gp";
  std::ofstream(path) << script;
  return RunGnuplot(path);
}

namespace {

using Group = std::vector<const ReportRow*>;

// Runs are seeds of one experiment when their resolved configs agree but
// for the seed (ReportRow::config); a run without a config.yaml stands by
// its name. Groups in order of their first run.
std::vector<Group> GroupBySeeds(const std::vector<ReportRow>& rows) {
  std::vector<Group> groups;
  for (const ReportRow& r : rows) {
    auto same = [&r](const Group& g) {
      return g.front()->name == r.name && g.front()->config == r.config;
    };
    auto it = std::find_if(groups.begin(), groups.end(), same);
    if (it == groups.end()) groups.push_back({&r});
    else it->push_back(&r);
  }
  return groups;
}

// "quick (rounds=5, train.lr=0.1)": the name, and the keys in which this
// group's config differs from another group's of the same name.
std::string GroupLabel(const Group& g, const std::vector<Group>& all) {
  std::set<std::string> differ;
  const auto& mine = g.front()->config;
  for (const Group& o : all) {
    if (&o == &g || o.front()->name != g.front()->name) continue;
    const auto& theirs = o.front()->config;
    for (const auto& [k, v] : mine)
      if (!theirs.count(k) || theirs.at(k) != v) differ.insert(k);
    for (const auto& [k, v] : theirs)
      if (!mine.count(k)) differ.insert(k);
  }
  if (differ.empty()) return g.front()->name;
  std::vector<std::string> parts;
  for (const std::string& k : differ)
    parts.push_back(absl::StrCat(k, "=", mine.count(k) ? mine.at(k) : "-"));
  return absl::StrCat(g.front()->name, " (", absl::StrJoin(parts, ", "), ")");
}

}  // namespace

std::string FormatMarkdownTable(const std::vector<ReportRow>& rows,
                                const std::vector<std::string>& run_dirs) {
  const std::vector<Group> groups = GroupBySeeds(rows);
  std::string out =
      "| config | runs | final accuracy (%) | rounds to threshold | total MB (up + down) |\n"
      "| --- | --- | --- | --- | --- |\n";
  for (const Group& runs : groups) {
    const std::string name = GroupLabel(runs, groups);
    double sum = 0, sq = 0, mb = 0, reached_sum = 0;
    int reached = 0;
    for (const ReportRow* r : runs) {
      sum += 100 * r->final_accuracy;
      sq += 1e4 * r->final_accuracy * r->final_accuracy;
      mb += r->mb_up + r->mb_down;
      if (r->rounds_to_threshold) reached_sum += *r->rounds_to_threshold, ++reached;
    }
    const double n = static_cast<double>(runs.size());
    const double mean = sum / n;
    const double sd = runs.size() > 1 ? std::sqrt(std::max(0.0, (sq - n * mean * mean) / (n - 1))) : 0;
    const std::string to = reached == 0 ? "never"
                           : absl::StrFormat("%.1f (%d of %d runs)", reached_sum / reached,
                                             reached, runs.size());
    absl::StrAppendFormat(&out, "| %s | %d | %.2f ± %.2f | %s | %.2f |\n", name, runs.size(),
                          mean, sd, to, mb / n);
  }
  absl::StrAppend(&out, "\nRead from:");
  for (const std::string& d : run_dirs) absl::StrAppend(&out, " `", d, "`");
  absl::StrAppend(&out, "\n");
  return out;
}

}  // namespace shefl
