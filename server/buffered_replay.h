// Replays a round.mode buffered run (docs/DESIGN.md, "Buffered
// asynchronous rounds"). An asynchronous run is not reproducible by
// running it again: which updates meet in a buffer depends on timing. Its
// results folder holds what makes it checkable: the models it started from
// (initial_models.ckpt), the order and weight of every update each
// application took (buffer_log.jsonl) and, with buffered.record_uploads,
// the updates themselves (uploads/TICKET-MODEL.delta, fp32). A replay
// folds the same updates with the same weights through the same rule and
// round kind, so it must reach the run's models bit for bit.
// Thread-compatible: one call runs alone.
#ifndef SHEFL_SERVER_BUFFERED_REPLAY_H_
#define SHEFL_SERVER_BUFFERED_REPLAY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// The replayed models' SHA-256 digests (summary.json's model_sha256).
absl::StatusOr<std::vector<std::string>> ReplayBufferedRun(
    const std::string& run_dir);

// shefl-coordinator --replay: replays, prints the digests, and fails
// naming the first model whose digest is not the run's.
absl::Status ReplayAndCompare(const std::string& run_dir);

}  // namespace shefl

#endif  // SHEFL_SERVER_BUFFERED_REPLAY_H_
