// `shefl report RUN_DIR...`: one table row per run, read from its
// summary.json and config.yaml; a run without a current summary.json
// (running, crashed) from its rounds.jsonl so far, and the table says so.
#ifndef SHEFL_CLI_REPORT_H_
#define SHEFL_CLI_REPORT_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

struct ReportRow {
  std::string name;  // config.yaml `name`, else the folder's base name
  std::string dir;   // the run folder as given
  // config.yaml flattened ("train.lr" -> "0.01"), without what differs
  // between seeds of one experiment (`seed`, `out_dir`): runs with equal
  // maps are seeds of one config. Empty without a readable config.yaml.
  std::map<std::string, std::string> config;
  int64_t rounds = 0;
  double final_accuracy = 0;
  double best_accuracy = 0;
  std::optional<int64_t> rounds_to_threshold;
  double mb_up = 0;
  double mb_down = 0;
  // privacy.mode runs: the epsilon spent (summary.json's, or the last
  // line's for a run not finished).
  std::optional<double> epsilon;
  // Empty for a finished run; else its state and rounds ("running, 2 of 8
  // rounds"), printed beneath the table.
  std::string unfinished;
};

// From summary.json when it is current (cli/run_state.h), else from
// rounds.jsonl. Fails, naming the file, when summary.json is missing and
// the folder is no run folder, or when summary.json is malformed.
absl::StatusOr<ReportRow> ReadReportRow(const std::string& run_dir);

// config.yaml of `run_dir` flattened as ReportRow::config holds it.
std::map<std::string, std::string> ComparableConfig(const std::string& run_dir);

// A fixed-width text table with a header line; each run named by its
// config's name and its folder.
std::string FormatReportTable(const std::vector<ReportRow>& rows);

}  // namespace shefl

#endif  // SHEFL_CLI_REPORT_H_
