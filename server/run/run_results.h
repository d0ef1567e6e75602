// The results folder of a run (docs/RESULTS.md): config.yaml,
// rounds.jsonl, summary.json and checkpoints/.
// Thread-compatible: the record thread writes, one call at a time.
#ifndef SHEFL_SERVER_RUN_RUN_RESULTS_H_
#define SHEFL_SERVER_RUN_RUN_RESULTS_H_

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shefl {

class RunResults {
 public:
  // Creates the folder (and checkpoints/, daemons/) if needed.
  static absl::StatusOr<RunResults> Open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  std::string checkpoint_path() const { return dir_ + "/checkpoints/latest.ckpt"; }
  // Who owns which clients and names (server/run/ownership_file.h).
  std::string ownership_path() const { return dir_ + "/checkpoints/ownership.json"; }
  // The server optimiser's state after `round` (common/fed/server_optimizer.h).
  std::string server_optimizer_path(int64_t round) const {
    return dir_ + "/checkpoints/server_optimizer-" + std::to_string(round) +
           ".bin";
  }

  // The update source's state after `round` (server/source/update_source.h).
  std::string source_state_path(int64_t round) const {
    return dir_ + "/checkpoints/source-" + std::to_string(round) + ".bin";
  }

  absl::Status WriteConfig(const std::string& yaml) const;
  // Appends one line to rounds.jsonl and flushes it.
  absl::Status AppendRound(const nlohmann::json& line) const;
  // Drops lines of rounds.jsonl after `round` (resume after a crash).
  absl::Status TruncateRounds(int64_t round) const;
  absl::Status WriteSummary(const nlohmann::json& summary) const;

 private:
  explicit RunResults(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_RUN_RESULTS_H_
