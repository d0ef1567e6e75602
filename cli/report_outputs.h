// What `shefl report` writes besides its text table: PNG plots made with
// gnuplot (Debian's gnuplot-nox) and a Markdown table in the form of the
// SHEFL paper's Table 1, seeds of one experiment pooled.
#ifndef SHEFL_CLI_REPORT_OUTPUTS_H_
#define SHEFL_CLI_REPORT_OUTPUTS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/report.h"

namespace shefl {

// In `out_dir`: accuracy_vs_round.png, accuracy_vs_bytes.png (cumulative
// MB uploaded) with one line per run, and bytes_per_round.png (MB up per
// round by tier, one pair of lines per run), from each run's rounds.jsonl.
// `names[i]` labels `run_dirs[i]`.
absl::Status WritePlots(const std::vector<std::string>& run_dirs,
                        const std::vector<std::string>& names,
                        const std::string& out_dir);

// | config | runs | final accuracy (mean +- std) | rounds to threshold |
// total MB | , one row per experiment (runs whose resolved configs differ
// only in the seed pooled; two experiments of one name are told apart by
// the keys they differ in), and the folders read beneath.
std::string FormatMarkdownTable(const std::vector<ReportRow>& rows,
                                const std::vector<std::string>& run_dirs);

}  // namespace shefl

#endif  // SHEFL_CLI_REPORT_OUTPUTS_H_
