#include "client/local_trainer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"
#include "common/fed/client_metrics.h"
#include "common/fed/fens_split.h"
#include "common/fed/partition.h"
#include "common/learn/flat_state.h"
#include "common/learn/train.h"
#include "common/learn_stacked/cohort_train.h"

namespace shefl {

absl::StatusOr<std::unique_ptr<LocalTrainer>> LocalTrainer::Create(
    const ExperimentConfig& config, const std::vector<int64_t>& clients,
    c10::Device device, const std::string& residual_dir, uint64_t fingerprint,
    int slots) {
  if (config.partition.scheme == "own")
    return absl::UnimplementedError(
        "partition.scheme 'own' (a daemon's local data folder) is not "
        "supported yet; use iid, dirichlet or shards");
  auto t = std::unique_ptr<LocalTrainer>(new LocalTrainer());
  t->config_ = config;
  t->device_ = device;
  SHEFL_ASSIGN_OR_RETURN(auto vt,
                         ParseValueType(config.compression.value_type));
  t->compressor_ = std::make_unique<DeltaCompressor>(
      vt, config.compression.error_feedback, device, residual_dir,
      fingerprint);
  if (auto* book = t->compressor_->residuals()) {
    // Only this daemon's clients: the folder may be shared (residual_book.h).
    const std::set<int64_t> mine(clients.begin(), clients.end());
    SHEFL_RETURN_IF_ERROR(book->Load(&t->residuals_loaded_, mine));
  }
  SHEFL_ASSIGN_OR_RETURN(t->train_,
                         LoadDataset(config.data, /*train=*/true, config.seed));
  SHEFL_ASSIGN_OR_RETURN(auto labels, LabelVector(t->train_));
  // FENS partitions what its proxy split leaves (common/fed/fens_split.h).
  // One partition for all of this daemon's clients.
  SHEFL_ASSIGN_OR_RETURN(
      auto all,
      TrainingIndicesOf(config, labels, t->train_.num_classes, clients));
  for (size_t i = 0; i < clients.size(); ++i) {
    const int64_t c = clients[i];
    // The part the client holds out for its evaluation is never trained
    // on (eval.client_holdout; common/fed/client_metrics.h).
    SHEFL_ASSIGN_OR_RETURN(
        auto split,
        SplitClientShard(all[i], config.eval.client_holdout, config.seed, c));
    t->shards_[c] = std::move(split.train);
  }
  SHEFL_ASSIGN_OR_RETURN(auto shape,
                         ShapeOf(t->train_, config.data.text_vocab));
  for (int slot = 0; slot < std::max(1, slots); ++slot) {
    SHEFL_ASSIGN_OR_RETURN(auto net, MakeModel(config.model.name, shape));
    net->to(device);
    t->nets_.push_back(net);
  }
  t->dim_ = FlatSize(*t->nets_[0]);
  t->shape_ = shape;
  SHEFL_ASSIGN_OR_RETURN(auto mode, ParseStacking(config.train.stacking));
  SHEFL_ASSIGN_OR_RETURN(
      t->stacks_, ResolveStacking(mode, *t->nets_[0], config.train, device));
  return t;
}

uint64_t LocalTrainer::NumSamples(int64_t client) const {
  auto it = shards_.find(client);
  return it == shards_.end() ? 0 : it->second.size();
}

absl::Status LocalTrainer::CheckTask(int64_t client, int64_t model) const {
  if (shards_.count(client) == 0)
    return absl::NotFoundError(
        absl::StrCat("client ", client, " is not hosted by this daemon"));
  if (model < 0 || model >= config_.model.num_models)
    return absl::InvalidArgumentError(
        absl::StrCat("model id ", model, " is out of range"));
  return absl::OkStatus();
}

TrainConfig LocalTrainer::ConfigFor(const TaskSettings& s) const {
  TrainConfig cfg = config_.train;
  cfg.batch_size = s.batch_size;
  cfg.prox_mu = s.prox_mu;
  return cfg;
}

LocalTrainParams LocalTrainer::ParamsFor(int64_t client, int64_t model,
                                         const TaskSettings& s) const {
  LocalTrainParams p;
  p.lr = s.lr;
  p.epochs = s.local_epochs;
  p.steps = s.local_steps;
  p.seed = config_.seed;
  p.round = s.seed_round > 0 ? s.seed_round : s.round;
  p.client = client;
  p.member = model;
  p.device = device_;
  return p;
}

absl::StatusOr<TrainedUpdate> LocalTrainer::Package(
    int64_t client, int64_t model, int64_t round, Net& net,
    const at::Tensor& global_flat, int64_t k, const TrainStats& stats,
    std::chrono::steady_clock::time_point start) {
  at::Tensor delta = Flatten(net) - global_flat;
  if (adversary_) adversary_->TamperDelta(&delta);
  TrainedUpdate out;
  if (config_.aggregation.secure != "off") {
    const at::Tensor host = delta.to(at::kCPU).contiguous();
    out.dense.assign(host.data_ptr<float>(),
                     host.data_ptr<float>() + host.numel());
    out.nnz = out.dense.size();
  } else {
    SHEFL_ASSIGN_OR_RETURN(
        auto encoded,
        compressor_->Compress(client, model, round, delta, k, &out.nnz));
    out.encoded = std::move(encoded);
  }
  out.num_samples = shards_.at(client).size();
  out.train_loss = stats.mean_loss;
  out.train_seconds = stats.seconds;
  out.total_seconds = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
  return out;
}

absl::StatusOr<TrainedUpdate> LocalTrainer::Train(
    int slot, int64_t client, int64_t model, const std::vector<float>& global,
    int64_t k, const TaskSettings& s) {
  const auto start = std::chrono::steady_clock::now();
  SHEFL_RETURN_IF_ERROR(CheckTask(client, model));
  if (slot < 0 || slot >= static_cast<int>(nets_.size()))
    return absl::InvalidArgumentError(absl::StrCat("no training slot ", slot));
  Net& net = *nets_[slot];
  SHEFL_RETURN_IF_ERROR(Unflatten(global, net));
  try {
    const at::Tensor global_flat = Flatten(net).clone();
    LocalTrainParams p = ParamsFor(client, model, s);
    if (s.prox_mu > 0) p.prox_reference = global_flat;
    SHEFL_ASSIGN_OR_RETURN(
        auto stats,
        LocalTrain(net, train_, shards_.at(client), ConfigFor(s), p));
    return Package(client, model, s.round, net, global_flat, k, stats, start);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("training client ", client,
                                            " model ", model, ": ", e.what()));
  }
}

}  // namespace shefl
