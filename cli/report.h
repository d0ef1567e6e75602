// `shefl report RUN_DIR...`: one table row per run, read from its
// summary.json and config.yaml; a run without a current summary.json
// (running, crashed) from its rounds.jsonl so far, and the table says so.
#ifndef SHEFL_CLI_REPORT_H_
#define SHEFL_CLI_REPORT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

struct ReportRow {
  std::string name;  // config.yaml `name`, else the folder's base name
  int64_t rounds = 0;
  double final_accuracy = 0;
  double best_accuracy = 0;
  std::optional<int64_t> rounds_to_threshold;
  double mb_up = 0;
  double mb_down = 0;
  // Empty for a finished run; else its state and rounds ("running, 2 of 8
  // rounds"), printed beneath the table.
  std::string unfinished;
};

// From summary.json when it is current (cli/run_state.h), else from
// rounds.jsonl. Fails, naming the file, when summary.json is missing and
// the folder is no run folder, or when summary.json is malformed.
absl::StatusOr<ReportRow> ReadReportRow(const std::string& run_dir);

// A fixed-width text table with a header line.
std::string FormatReportTable(const std::vector<ReportRow>& rows);

}  // namespace shefl

#endif  // SHEFL_CLI_REPORT_H_
