#include "cli/report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/progress.h"
#include "cli/run_state.h"

namespace shefl {
namespace {

std::string RunName(const std::string& run_dir) {
  try {  // yaml-cpp reports errors by exception; none may escape.
    YAML::Node config = YAML::LoadFile(run_dir + "/config.yaml");
    if (config["name"] && config["name"].IsScalar()) {
      return config["name"].as<std::string>();
    }
  } catch (const YAML::Exception&) {
  }
  return std::filesystem::path(run_dir).lexically_normal().filename().string();
}

void Flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>* out) {
  if (node.IsMap()) {
    for (const auto& kv : node)
      Flatten(kv.second, prefix.empty() ? kv.first.as<std::string>()
                                        : prefix + "." + kv.first.as<std::string>(),
              out);
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  (*out)[prefix] = e.c_str();
}

double Number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

// "running, 2 of 8 rounds".
std::string Unfinished(const RunInfo& info) {
  return absl::StrCat(RunStateName(info.state), ", ", info.rounds_done, " of ",
                      info.rounds_planned, " rounds");
}

// The figures summary.json would hold, from the rounds recorded so far.
ReportRow RowFromRounds(const RunInfo& info) {
  ReportRow row;
  row.name = info.name;
  row.rounds = info.rounds_done;
  row.final_accuracy = info.last_accuracy.value_or(0);
  row.best_accuracy = info.best_accuracy.value_or(0);
  for (const nlohmann::json& r : info.rounds) {
    if (!r.is_object()) continue;
    if (r.contains("epsilon") && r["epsilon"].is_number())
      row.epsilon = r["epsilon"].get<double>();
    row.mb_up += Number(r, "bytes_up") / 1e6;
    row.mb_down += Number(r, "bytes_down") / 1e6;
    const bool evaluated = IsEvaluated(r) && r.contains("ensemble_accuracy") &&
                           r["ensemble_accuracy"].is_number();
    if (!row.rounds_to_threshold && info.threshold >= 0 && evaluated &&
        r["ensemble_accuracy"].get<double>() >= info.threshold)
      row.rounds_to_threshold = static_cast<int64_t>(Number(r, "round"));
  }
  row.unfinished = Unfinished(info);
  return row;
}

absl::StatusOr<ReportRow> ReadRow(const std::string& run_dir) {
  std::string path = run_dir + "/summary.json";
  absl::StatusOr<RunInfo> info = ReadRunInfo(run_dir);
  std::ifstream in(path);
  // A summary.json that an earlier sitting left behind a resumed run is
  // not the run's: its rounds.jsonl is.
  if (!in || (info.ok() && !info->summary)) {
    if (info.ok()) return RowFromRounds(*info);
    return absl::NotFoundError(
        absl::StrCat("cannot read ", path, " (", info.status().message(), ")"));
  }
  nlohmann::json s = nlohmann::json::parse(in, nullptr, false);
  if (s.is_discarded() || !s.is_object()) {
    return absl::DataLossError(absl::StrCat(path, " is not a JSON object"));
  }
  ReportRow row;
  row.name = RunName(run_dir);
  row.rounds = static_cast<int64_t>(Number(s, "rounds"));
  row.final_accuracy = Number(s, "final_accuracy");
  row.best_accuracy = Number(s, "best_accuracy");
  if (s.contains("rounds_to_threshold") &&
      s["rounds_to_threshold"].is_number()) {
    row.rounds_to_threshold = s["rounds_to_threshold"].get<int64_t>();
  }
  row.mb_up = Number(s, "total_bytes_up") / 1e6;
  row.mb_down = Number(s, "total_bytes_down") / 1e6;
  if (s.contains("epsilon") && s["epsilon"].is_number())
    row.epsilon = s["epsilon"].get<double>();
  if (info.ok() && info->state != RunState::kFinished) row.unfinished = Unfinished(*info);
  return row;
}

}  // namespace

std::map<std::string, std::string> ComparableConfig(const std::string& run_dir) {
  std::map<std::string, std::string> flat;
  try {  // yaml-cpp reports errors by exception; none may escape.
    Flatten(YAML::LoadFile(run_dir + "/config.yaml"), "", &flat);
  } catch (const YAML::Exception&) {
    return {};
  }
  // What one experiment's seeds differ in.
  flat.erase("seed");
  flat.erase("out_dir");
  return flat;
}

absl::StatusOr<ReportRow> ReadReportRow(const std::string& run_dir) {
  absl::StatusOr<ReportRow> row = ReadRow(run_dir);
  if (!row.ok()) return row;
  row->dir = run_dir;
  row->config = ComparableConfig(run_dir);
  return row;
}

std::string FormatReportTable(const std::vector<ReportRow>& rows) {
  size_t width = 4;
  for (const ReportRow& r : rows) width = std::max(width, r.name.size());
  const int w = static_cast<int>(width);
  // The epsilon column only when some run has differential privacy.
  const bool dp = std::any_of(rows.begin(), rows.end(),
                              [](const ReportRow& r) { return r.epsilon.has_value(); });
  std::string out = absl::StrFormat("%-*s  %6s  %9s  %8s  %12s  %10s  %10s  %s%s\n",
                                    w, "name", "rounds", "final acc",
                                    "best acc", "to threshold", "MB up",
                                    "MB down", dp ? " epsilon  " : "", "folder");
  for (const ReportRow& r : rows) {
    std::string reached = r.rounds_to_threshold
                              ? absl::StrCat(*r.rounds_to_threshold)
                              : "-";
    std::string eps;
    if (dp) eps = r.epsilon ? absl::StrFormat("%8.3f  ", *r.epsilon) : "       -  ";
    absl::StrAppendFormat(&out, "%-*s  %6d  %8.1f%%  %7.1f%%  %12s  %10.2f  %10.2f  %s%s\n",
                          w, r.name, r.rounds, 100 * r.final_accuracy,
                          100 * r.best_accuracy, reached, r.mb_up, r.mb_down,
                          eps, r.dir);
  }
  for (const ReportRow& r : rows)
    if (!r.unfinished.empty())
      absl::StrAppend(&out, "note: ", r.name, " is not finished (", r.unfinished,
                      "): its figures are those of the rounds so far\n");
  return out;
}

}  // namespace shefl
