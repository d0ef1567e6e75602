// What a daemon computes for one (client, model) task, without the network:
// load the global weights into the model on the device, train on the
// client's shard, delta = local - global, error feedback, top-k on the
// device, copy only the kept pairs to the host, encode.
// Thread-safe across slots: Train runs concurrently on distinct slots (one
// task at a time per slot and per (client, model)); the rest reads state
// fixed at Create, and Settle goes to the thread-safe residual book.
// TaskSettings and TrainedUpdate are plain values.
#ifndef SHEFL_CLIENT_LOCAL_TRAINER_H_
#define SHEFL_CLIENT_LOCAL_TRAINER_H_

#include <c10/core/Device.h>

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/adversary.h"
#include "client/delta_compressor.h"
#include "common/core/config.h"
#include "common/data/dataset.h"
#include "common/learn/models.h"
#include "common/learn/train.h"

namespace shefl {

// The training settings a task carries (the coordinator is authoritative).
struct TaskSettings {
  int64_t round = 1;  // from 1
  // What seeds the batch order (Task.seed_round): 0 means `round`.
  int64_t seed_round = 0;
  double lr = 0.01;
  int64_t local_epochs = 1;
  int64_t local_steps = 0;
  int64_t batch_size = 16;
  double prox_mu = 0;
};

struct TrainedUpdate {
  std::string encoded;      // common/sparse/codec.h encoding of the sparse delta
  // aggregation.secure: the whole delta (d floats) instead, for the
  // daemon's secure session (client/secure_sessions.h), which applies the
  // residual itself.
  std::vector<float> dense;
  uint64_t nnz = 0;
  uint64_t num_samples = 0;
  double train_loss = 0;
  double train_seconds = 0;  // local training alone
  double total_seconds = 0;  // training, delta, top-k and encoding
};

class LocalTrainer {
 public:
  // Loads the training split named by `config` and computes the shards of
  // `clients` (partition from the shared spec; no other shard is built).
  // With error feedback on, accepted residuals are kept under
  // `residual_dir` (if not empty) and those of `fingerprint` found there
  // are loaded. `slots` tasks may train at once, each in its own slot.
  static absl::StatusOr<std::unique_ptr<LocalTrainer>> Create(
      const ExperimentConfig& config, const std::vector<int64_t>& clients,
      c10::Device device, const std::string& residual_dir = "",
      uint64_t fingerprint = 0, int slots = 1);

  int64_t dim() const { return dim_; }
  c10::Device device() const { return device_; }
  uint64_t NumSamples(int64_t client) const;
  // The label histogram of `client`'s shard (HASA; local_trainer_labels.cc).
  std::vector<uint64_t> LabelCounts(int64_t client) const;

  // Thread-safe across slots; one task at a time per slot, and per
  // (client, model).
  absl::StatusOr<TrainedUpdate> Train(int slot, int64_t client, int64_t model,
                                      const std::vector<float>& global,
                                      int64_t k, const TaskSettings& s);
  absl::StatusOr<TrainedUpdate> Train(int64_t client, int64_t model,
                                      const std::vector<float>& global,
                                      int64_t k, const TaskSettings& s) {
    return Train(0, client, model, global, k, s);
  }

  // train.stacking as resolved for this daemon's model and device: whether
  // a round's tasks train as one stack (TrainCohort).
  bool stacks() const { return stacks_; }
  // One task of a cohort; `global` outlives the call.
  struct CohortItem {
    int64_t client = 0, model = 0;
    const std::vector<float>* global = nullptr;
    int64_t k = 0;
    TaskSettings settings;
  };
  // Trains `items` (distinct (client, model) pairs, none also in Train at the
  // time) as one stack (common/learn_stacked/cohort_train.h), each to its own
  // update or its own error, in order. Items whose batch size or prox mu differ
  // from the first's train one by one. Not concurrent with itself.
  std::vector<absl::StatusOr<TrainedUpdate>> TrainCohort(
      const std::vector<CohortItem>& items);

  // The coordinator's answer to the upload of Train's result for `round`.
  absl::Status Settle(int64_t client, int64_t model, int64_t round,
                      bool accepted) {
    return compressor_->Settle(client, model, round, accepted);
  }
  int residuals_loaded() const { return residuals_loaded_; }
  // The error-feedback residuals; null when error feedback is off.
  ResidualBook* residuals() const { return compressor_->residuals(); }
  // A lying daemon (client/adversary.h); before the first Train only.
  void SetAdversary(std::optional<Adversary> a) { adversary_ = std::move(a); }

 private:
  // NotFound / InvalidArgument for a client not hosted here or a model id
  // out of range.
  absl::Status CheckTask(int64_t client, int64_t model) const;
  TrainConfig ConfigFor(const TaskSettings& s) const;
  LocalTrainParams ParamsFor(int64_t client, int64_t model,
                             const TaskSettings& s) const;
  // delta = trained - global, the adversary's hand, top-k with error
  // feedback on the device and the encoding: the update of a trained net.
  absl::StatusOr<TrainedUpdate> Package(
      int64_t client, int64_t model, int64_t round, Net& net,
      const at::Tensor& global_flat, int64_t k, const TrainStats& stats,
      std::chrono::steady_clock::time_point start);
  // A network per cohort lane, made as they are first needed.
  absl::StatusOr<std::shared_ptr<Net>> CohortNet(size_t lane);

  ExperimentConfig config_;
  c10::Device device_ = c10::Device(c10::kCPU);
  Dataset train_;
  std::map<int64_t, std::vector<int64_t>> shards_;
  // One network per slot: every task loads all of its state (parameters
  // and floating buffers) from the global weights, so which network a
  // task gets changes nothing.
  std::vector<std::shared_ptr<Net>> nets_;
  std::unique_ptr<DeltaCompressor> compressor_;
  int64_t dim_ = 0;
  int residuals_loaded_ = 0;
  std::optional<Adversary> adversary_;
  bool stacks_ = false;
  ModelShape shape_;
  std::vector<std::shared_ptr<Net>> cohort_nets_;  // TrainCohort's lanes
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_LOCAL_TRAINER_H_
