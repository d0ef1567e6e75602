#include "cli/report.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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

double Number(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

}  // namespace

absl::StatusOr<ReportRow> ReadReportRow(const std::string& run_dir) {
  std::string path = run_dir + "/summary.json";
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
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
  return row;
}

std::string FormatReportTable(const std::vector<ReportRow>& rows) {
  size_t width = 4;
  for (const ReportRow& r : rows) width = std::max(width, r.name.size());
  const int w = static_cast<int>(width);
  std::string out = absl::StrFormat("%-*s  %6s  %9s  %8s  %12s  %10s  %10s\n",
                                    w, "name", "rounds", "final acc",
                                    "best acc", "to threshold", "MB up",
                                    "MB down");
  for (const ReportRow& r : rows) {
    std::string reached = r.rounds_to_threshold
                              ? absl::StrCat(*r.rounds_to_threshold)
                              : "-";
    absl::StrAppendFormat(&out, "%-*s  %6d  %8.1f%%  %7.1f%%  %12s  %10.2f  %10.2f\n",
                          w, r.name, r.rounds, 100 * r.final_accuracy,
                          100 * r.best_accuracy, reached, r.mb_up, r.mb_down);
  }
  return out;
}

}  // namespace shefl
