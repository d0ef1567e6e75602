// The pieces of LocalTrain (common/learn/train.h) that the stacked paths
// share with it, so that both see the same batches and take the same
// optimiser steps. Internal to common/learn, the room on it that holds
// those paths (common/learn_stacked/) and their tests: learn's one header
// written for a room above it, which it neither includes nor calls.
// Stateless functions; thread-safe.
#ifndef SHEFL_COMMON_LEARN_TRAIN_INTERNAL_H_
#define SHEFL_COMMON_LEARN_TRAIN_INTERNAL_H_

#include <torch/optim/optimizer.h>

#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "common/learn/train.h"

namespace shefl {

// The pieces of LocalTrain that the stacked path shares with it, so that
// both see the same batches and take the same optimiser steps. Not for
// other callers.
namespace train_internal {

using BatchRange = std::pair<int64_t, int64_t>;  // [begin, end) of one batch

// LocalTrain's argument checks (InvalidArgument naming what is wrong).
absl::Status CheckInputs(const Dataset& data,
                         const std::vector<int64_t>& indices,
                         const TrainConfig& cfg, const LocalTrainParams& p);

// The shard on `dev`: data.x/y gathered there when the data lives
// elsewhere (ids then renumbered 0..n-1), y as int64.
struct Shard {
  at::Tensor x, y;
  std::vector<int64_t> ids;
};
Shard GatherShard(const Dataset& data, std::vector<int64_t> ids,
                  c10::Device dev);

// The batches of every pass over `shard` for `model` (already on the
// shard's device): a trailing batch of one sample folded into the one
// before where the model cannot train on one sample (see LocalTrain).
std::vector<BatchRange> PassBatches(Net& model, const Shard& shard,
                                    int64_t batch_size);

// The batch-order generator of (p.seed, p.round, p.client, p.member).
std::mt19937_64 BatchOrderRng(const LocalTrainParams& p);

// SGD with momentum and weight decay (LeanSgd: torch's arithmetic, less
// memory traffic), or Adam, as cfg says. Training loops drop the gradients
// before each step (DropGrads) rather than zero them.
std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const TrainConfig& cfg, double lr, std::vector<at::Tensor> params);

// Sets the lr of the coming step from cfg.lr_schedule: per pass when p
// trains by epochs, per step when by p.steps. A no-op under "constant".
void ScheduleStep(torch::optim::Optimizer& opt, const TrainConfig& cfg,
                  const LocalTrainParams& p, int64_t pass, int64_t step);

// The lr of the coming step under cfg.lr_schedule (p.lr itself under
// "constant"): per pass when p trains by epochs, per step by p.steps.
double StepLearningRate(const TrainConfig& cfg, const LocalTrainParams& p,
                        int64_t pass, int64_t step);

}  // namespace train_internal
}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_TRAIN_INTERNAL_H_
