// The lanes of a cohort stack (common/learn_stacked/cohort_train.h): each
// task's own walk through its shard, pass after pass in its own batch order,
// and the books from which its TrainStats come. Internal to this room. A plain
// value; not thread-safe.
#ifndef SHEFL_COMMON_LEARN_STACKED_COHORT_LANES_H_
#define SHEFL_COMMON_LEARN_STACKED_COHORT_LANES_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "common/learn/train.h"
#include "common/learn/train_internal.h"
#include "common/learn_stacked/cohort_train.h"

namespace shefl {
namespace cohort_internal {

struct Lane {
  size_t task = 0;               // index in the cohort's tasks
  LocalTrainParams p;
  std::vector<int64_t> ids;      // rows of the gathered union, shuffled per pass
  std::vector<train_internal::BatchRange> batches;  // of one pass
  std::mt19937_64 rng;
  int64_t pass = -1;             // the pass in progress; -1 before the first
  size_t next = 0;               // its next batch
  int64_t steps = 0, samples = 0;
  std::vector<int64_t> pass_samples;  // per pass begun

  // The rows of the lane's next batch, beginning a pass (and shuffling, as
  // LocalTrain does) where the last one ended; nullopt once the lane has
  // taken all its steps.
  std::optional<train_internal::BatchRange> Next();
  // The passes this lane can begin at most (for the loss books).
  int64_t MaxPasses() const;
  // How many of the lane's coming steps in a row have a batch of `full`
  // samples (at most `cap`): how long a captured step stays valid.
  int64_t FullStepsAhead(int64_t full, int64_t cap) const;
};

// TrainStats from a lane's per-pass loss sums (each sum over the pass of
// loss x batch size, as LocalTrain keeps it) and its first loss; the
// error LocalTrain gives where a pass's loss is not finite.
absl::StatusOr<TrainStats> LaneStats(const Lane& lane,
                                     const std::vector<double>& pass_sums,
                                     double first_loss, double seconds);

// The stacked loop over `lanes` (each task's net in tasks[lane.task]),
// the union of their shards gathered as x/y on `device`. Fills
// results[lane.task] for every lane it finishes; on a torch error it
// returns it (a c10::Error's message) with the unfinished lanes' nets
// untouched and their results unset.
struct CohortShard {
  at::Tensor x, y;  // the union of the lanes' shards, on the device
};
// `cuda_graphs`: record the step as a CUDA graph where one applies.
absl::Status RunStack(std::vector<Lane> lanes, const CohortShard& shard,
                      std::vector<CohortTask>& tasks, const TrainConfig& cfg,
                      c10::Device device, bool cuda_graphs,
                      std::vector<std::optional<absl::StatusOr<TrainStats>>>&
                          results);

}  // namespace cohort_internal
}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_COHORT_LANES_H_
