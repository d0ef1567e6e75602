// Local training: one client trains one model on its own shard for a round (an
// HPC's M models on one shard, looped or stacked, and a round's tasks as one
// stack are the stacked room's: common/learn_stacked/). The batch order is
// drawn from the seed, so a client retrained with the same (seed, round,
// client, member) produces bit-identical weights on the same device and thread
// count. Thread-compatible: LocalTrainParams and TrainStats are plain values.
#ifndef SHEFL_COMMON_LEARN_TRAIN_H_
#define SHEFL_COMMON_LEARN_TRAIN_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <random>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/data/dataset.h"
#include "common/fed/lr_schedule.h"
#include "common/learn/models.h"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace shefl {

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
  // flat state (common/learn/flat_state.h; its buffer tail is ignored).
  at::Tensor prox_reference;
  c10::Device device = c10::Device(c10::kCPU);
};

struct TrainStats {
  int64_t steps = 0;
  int64_t samples = 0;         // samples seen, counting repeats
  double mean_loss = 0;        // cross-entropy, sample-weighted, all steps
  double first_loss = 0;       // cross-entropy of the first batch
  double last_epoch_loss = 0;  // mean cross-entropy over the last pass
  double seconds = 0;
};

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

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_TRAIN_H_
