// Local training: one client trains one model (or an HPC its M models) on
// its own shard for a round. The batch order is drawn from the seed, so a
// client retrained with the same (seed, round, client, member) produces
// bit-identical weights on the same device and thread count.
#ifndef SHEFL_COMMON_TRAIN_H_
#define SHEFL_COMMON_TRAIN_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config.h"
#include "common/dataset.h"
#include "common/models.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace shefl {

// How LocalTrainMany trains its members: kAuto stacks them into one
// computation (common/stacked_members.h) on CUDA where the model allows and
// loops on CPU, where stacking gained nothing (DESIGN.md section 7); kOn
// and kOff force either path (tests, bench/stacked_train_bench).
enum class StackedPath { kAuto, kOn, kOff };

// What varies per call; the rest comes from TrainConfig (optimizer,
// momentum, weight_decay, batch_size, prox_mu).
struct LocalTrainParams {
  double lr = 0.01;    // already decayed for the round (RoundLearningRate)
  int64_t epochs = 1;  // passes over the shard ...
  int64_t steps = 0;   // ... unless > 0: this many batches instead
  // Batch order: DeriveSeed(seed, kBatchOrder, {round, client, member}).
  uint64_t seed = 1;
  int64_t round = 0;
  int64_t client = 0;
  int64_t member = 0;
  // FedProx: when defined and cfg.prox_mu > 0, the loss gains
  // prox_mu/2 * ||w - w_ref||^2 over the parameters, where w_ref is this
  // flat state (common/flat_state.h; its buffer tail is ignored).
  at::Tensor prox_reference;
  c10::Device device = c10::Device(c10::kCPU);
  StackedPath stacked = StackedPath::kAuto;  // LocalTrainMany only
};

struct TrainStats {
  int64_t steps = 0;
  int64_t samples = 0;         // samples seen, counting repeats
  double mean_loss = 0;        // cross-entropy, sample-weighted, all steps
  double first_loss = 0;       // cross-entropy of the first batch
  double last_epoch_loss = 0;  // mean cross-entropy over the last pass
  double seconds = 0;
};

// lr * lr_decay^floor(round / lr_decay_every); round counts from 0.
double RoundLearningRate(const TrainConfig& cfg, int64_t round);

// The lr of a local training's pass `pass` of `passes` (epochs), or of its
// step `pass` of `passes` when it trains by local_steps: round_lr under
// lr_schedule "constant"; round_lr * (1 + cos(pi * pass / passes)) / 2
// under "cosine" (CosineAnnealingLR with eta_min 0, stepped per epoch).
double LocalLearningRate(const TrainConfig& cfg, double round_lr, int64_t pass,
                         int64_t passes);

// Params for (round, client, member) from the config: decayed lr,
// local_steps, and hpc_local_epochs instead of local_epochs where `hpc` and
// it is set.
LocalTrainParams MakeLocalTrainParams(const TrainConfig& cfg, uint64_t seed,
                                      int64_t round, int64_t client,
                                      int64_t member, bool hpc,
                                      c10::Device device);

// Trains `model` in place on data[indices] with a fresh optimiser (SGD with
// momentum/weight decay, or Adam). Moves the model to p.device; gathers
// batches with index_select on the device. Each pass reshuffles the shard;
// the last batch of a pass may be short, down to one sample, as with
// PyTorch's DataLoader(drop_last=False), so every pass sees all n samples.
// Where that one sample cannot train (a BatchNorm layer would see one value
// per channel, which PyTorch refuses too) it joins the batch before it
// instead: still every sample, one step fewer. The reported losses
// are the data loss, without the prox term. Errors: bad indices or config
// -> InvalidArgument; a non-finite loss -> Internal ("diverged"); a torch
// error -> Internal with its message. An empty shard trains nothing.
absl::StatusOr<TrainStats> LocalTrain(Net& model, const Dataset& data,
                                      const std::vector<int64_t>& indices,
                                      const TrainConfig& cfg,
                                      const LocalTrainParams& p);

// Trains several members on one shard with the same batch order (all use
// p's seed tags, p.member included), as an HPC does with its M models. The
// result equals LocalTrain on each member with `p`: exactly on the loop
// path, up to float rounding on the stacked one (p.stacked says which;
// LocalTrainStacked in common/stacked_members.h). On CPU kAuto loops (a
// fused pass measured 0.93-0.95x, DESIGN.md section 7). `prox_references`
// is empty or one per member. kOn with a model the stacked path does not
// know -> Unimplemented.
absl::StatusOr<std::vector<TrainStats>> LocalTrainMany(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p,
    const std::vector<at::Tensor>& prox_references = {});

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

// SGD with momentum and weight decay, or Adam, as cfg says.
std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const TrainConfig& cfg, double lr, std::vector<at::Tensor> params);

// Sets the lr of the coming step from cfg.lr_schedule: per pass when p
// trains by epochs, per step when by p.steps. A no-op under "constant".
void ScheduleStep(torch::optim::Optimizer& opt, const TrainConfig& cfg,
                  const LocalTrainParams& p, int64_t pass, int64_t step);

}  // namespace train_internal
}  // namespace shefl

#endif  // SHEFL_COMMON_TRAIN_H_
