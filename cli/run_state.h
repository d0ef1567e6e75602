// What a run folder says about its run, read from its files alone (and
// /proc, for whether its processes still live): `shefl ls`, `status`,
// `stop` and `report` share it. Free functions; thread-compatible.
//
// The state, first rule that holds:
//   finished   summary.json is current (written after the last line of
//              rounds.jsonl) and its rounds reach the config's rounds;
//   running    endpoints.json's coordinator_pid is a live
//              shefl-coordinator of this folder (checked in /proc, so a
//              reused pid does not count);
//   stopped    summary.json is current but short of the config's rounds:
//              the coordinator stopped cleanly (SIGTERM, `shefl stop`,
//              the quorum's give_up_after_s);
//   resumable  no current summary.json, a checkpoint: the coordinator
//              died (a crash, kill -9, a lost machine) after a round;
//   crashed    neither: it died before its first checkpoint.
// `stopped` and `resumable` runs go on with `shefl run --resume RUN_DIR`.
#ifndef SHEFL_CLI_RUN_STATE_H_
#define SHEFL_CLI_RUN_STATE_H_

#include <cstdint>
#include <ctime>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "cli/endpoints.h"

namespace shefl {

enum class RunState { kRunning, kFinished, kStopped, kResumable, kCrashed, kFailed };

// The file `shefl run` writes into the run folder when it ends the run on
// a failure (a daemon that cannot start, a coordinator that failed); a new
// launch of the folder removes it.
inline constexpr char kFailureFile[] = "failure.txt";

// "running", "finished", "stopped", "resumable", "crashed", "failed".
std::string RunStateName(RunState state);

struct RunInfo {
  std::string dir;
  std::string name;    // config.yaml's `name`, else the folder's name
  std::string method;  // config.yaml's `method`, else "-"
  int64_t num_clients = 0;
  int64_t rounds_planned = 0;  // config.yaml's `rounds`; 0: not given
  double threshold = -1;       // eval.threshold; < 0: not given
  std::vector<nlohmann::json> rounds;  // rounds.jsonl's complete lines
  int malformed_lines = 0;
  int64_t rounds_done = 0;  // the last line's round
  std::optional<double> best_accuracy, last_accuracy;
  double wall_seconds = 0;  // the current summary's, else the lines' sum
  std::optional<nlohmann::json> summary;  // only when current
  bool has_checkpoint = false;
  std::optional<Endpoints> endpoints;  // launcher_pid 0: not recorded
  bool coordinator_alive = false;
  bool launcher_alive = false;
  std::optional<std::time_t> started;
  std::string failure;  // failure.txt's first line; empty: none
  RunState state = RunState::kCrashed;
};

// OK for a run folder: config.yaml and rounds.jsonl or endpoints.json.
// Otherwise NotFound naming the folder and the file it lacks.
absl::Status CheckRunFolder(const std::string& dir);

// Reads every file of the folder; fails as CheckRunFolder does.
absl::StatusOr<RunInfo> ReadRunInfo(const std::string& dir);

// The state by the rules above, from what ReadRunInfo read.
RunState DecideState(const RunInfo& info);

// The mean wall seconds of the recorded rounds, times the rounds left; -1
// when there is nothing to go on.
double EtaSeconds(const RunInfo& info);

// "2026-11-03 14:02" (local time), or "-".
std::string FormatStarted(const std::optional<std::time_t>& t);
// "42 s", "12m05s", "3h20m".
std::string FormatWall(double seconds);

}  // namespace shefl

#endif  // SHEFL_CLI_RUN_STATE_H_
