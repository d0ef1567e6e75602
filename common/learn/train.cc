#include "common/learn/train.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <chrono>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"
#include "common/learn/lean_sgd.h"
#include "common/learn/precision.h"
#include "common/learn/torch_call.h"
#include "common/learn/train_internal.h"

namespace shefl {
namespace train_internal {

absl::Status CheckInputs(const Dataset& data,
                         const std::vector<int64_t>& indices,
                         const TrainConfig& cfg, const LocalTrainParams& p) {
  if (cfg.batch_size < 1) {
    return absl::InvalidArgumentError("train.batch_size must be >= 1");
  }
  if (cfg.optimizer != "sgd" && cfg.optimizer != "adam") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown optimizer '", cfg.optimizer, "' (known: sgd, adam)"));
  }
  if (p.epochs < 0 || p.steps < 0 || !(p.lr > 0)) {
    return absl::InvalidArgumentError(
        "local training needs lr > 0 and epochs, steps >= 0");
  }
  const int64_t n = data.size();
  for (int64_t i : indices) {
    if (i < 0 || i >= n) {
      return absl::InvalidArgumentError(
          absl::StrCat("sample index ", i, " is out of range for '", data.name,
                       "' with ", n, " samples"));
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<torch::optim::Optimizer> MakeOptimizer(
    const TrainConfig& cfg, double lr, std::vector<at::Tensor> params) {
  if (cfg.optimizer == "adam") {
    return std::make_unique<torch::optim::Adam>(
        std::move(params),
        torch::optim::AdamOptions(lr).weight_decay(cfg.weight_decay));
  }
  return std::make_unique<LeanSgd>(
      std::move(params), torch::optim::SGDOptions(lr)
                             .momentum(cfg.momentum)
                             .weight_decay(cfg.weight_decay));
}

}  // namespace train_internal

namespace {

using train_internal::BatchRange;
using train_internal::Shard;

// The batches of one pass over n samples, the last one short, as PyTorch's
// DataLoader with drop_last=False gives them: a trailing batch of one
// sample included. With `fold_lone` that sample joins the batch before it
// instead (for a model that cannot train on one sample; see below).
std::vector<BatchRange> BatchesOfPass(int64_t n, int64_t batch,
                                      bool fold_lone) {
  std::vector<BatchRange> out;
  for (int64_t b = 0; b < n; b += batch)
    out.push_back({b, std::min(n, b + batch)});
  if (fold_lone && out.size() > 1 && out.back().second - out.back().first == 1) {
    out.pop_back();
    out.back().second = n;
  }
  return out;
}

// Whether `model` can take a training step on the one sample `x1`. A
// BatchNorm layer in train mode refuses a batch that leaves it one value
// per channel (N * H * W == 1: the ResNets on inputs of 8x8 or smaller,
// whose last block is 1x1; on CIFAR's 32x32 it is 4x4 and one sample
// trains, as in PyTorch). Only a model with buffers can hold BatchNorm, so
// the others are not probed. The probe runs one forward pass without
// gradients and puts the buffers (running statistics, batch counts) back.
bool CanTrainOnOneSample(Net& model, const at::Tensor& x1) {
  std::vector<at::Tensor> buffers = model.buffers();
  if (buffers.empty()) return true;
  std::vector<at::Tensor> saved;
  for (const at::Tensor& b : buffers) saved.push_back(b.clone());
  bool ok = true;
  {
    c10::NoGradGuard no_grad;
    try {
      model.forward(x1);
    } catch (const c10::Error&) {
      ok = false;
    }
    for (size_t i = 0; i < buffers.size(); ++i) buffers[i].copy_(saved[i]);
  }
  return ok;
}

// mu/2 * ||w - w_ref||^2 over the parameters; the reference is cut into
// views matching each parameter (parameters lead the flat order).
class ProxTerm {
 public:
  ProxTerm(const Net& model, const at::Tensor& flat, double mu,
           c10::Device device)
      : mu_(mu) {
    if (!flat.defined() || mu <= 0) return;
    at::Tensor ref = flat.to(device, at::kFloat);
    int64_t offset = 0;
    for (const at::Tensor& w : model.parameters()) {
      refs_.push_back(ref.slice(0, offset, offset + w.numel()).view(w.sizes()));
      offset += w.numel();
    }
  }
  bool active() const { return !refs_.empty(); }
  at::Tensor Loss(const Net& model) const {
    std::vector<at::Tensor> params = model.parameters();
    at::Tensor sum = (params[0] - refs_[0]).pow(2).sum();
    for (size_t i = 1; i < params.size(); ++i) {
      sum = sum + (params[i] - refs_[i]).pow(2).sum();
    }
    return sum * (mu_ / 2);
  }

 private:
  double mu_;
  std::vector<at::Tensor> refs_;
};

// The training loop proper; torch errors propagate to LocalTrain.
absl::StatusOr<TrainStats> TrainLoop(Net& model, const Dataset& data,
                                     const std::vector<int64_t>& indices,
                                     const TrainConfig& cfg,
                                     const LocalTrainParams& p) {
  const auto start = std::chrono::steady_clock::now();
  const c10::Device dev = p.device;
  model.to(dev);
  model.train(true);
  Shard shard = train_internal::GatherShard(data, indices, dev);
  const at::Tensor& src_x = shard.x;
  const at::Tensor& src_y = shard.y;

  const int64_t param_count = NumParameters(model);
  if (p.prox_reference.defined() && cfg.prox_mu > 0 &&
      p.prox_reference.numel() < param_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("prox reference has ", p.prox_reference.numel(),
                     " values, the model has ", param_count, " parameters"));
  }
  ProxTerm prox(model, p.prox_reference, cfg.prox_mu, dev);
  auto opt = train_internal::MakeOptimizer(cfg, p.lr, model.parameters());
  std::mt19937_64 rng = train_internal::BatchOrderRng(p);
  std::vector<int64_t>& ids = shard.ids;
  const std::vector<BatchRange> batches =
      train_internal::PassBatches(model, shard, cfg.batch_size);
  const bool by_steps = p.steps > 0;

  TrainStats stats;
  double loss_sum = 0;
  for (int64_t pass = 0; by_steps ? stats.steps < p.steps : pass < p.epochs;
       ++pass) {
    Shuffle(ids, rng);
    at::Tensor order = at::tensor(ids, at::kLong).to(dev);
    at::Tensor pass_sum = at::zeros({}, src_x.options().dtype(at::kFloat));
    int64_t pass_n = 0;
    for (const BatchRange& r : batches) {
      if (by_steps && stats.steps >= p.steps) break;
      at::Tensor idx = order.slice(0, r.first, r.second);
      at::Tensor x = src_x.index_select(0, idx);
      at::Tensor y = src_y.index_select(0, idx);
      train_internal::ScheduleStep(*opt, cfg, p, pass, stats.steps);
      DropGrads(*opt);
      at::Tensor loss;
      {
        AutocastScope autocast(cfg.precision, dev);  // bf16: forward and loss
        loss = at::cross_entropy_loss(model.forward(x), y).to(at::kFloat);
      }
      at::Tensor total = prox.active() ? loss + prox.Loss(model) : loss;
      total.backward();
      opt->step();
      const int64_t bs = r.second - r.first;
      pass_sum += loss.detach().to(at::kFloat) * static_cast<double>(bs);
      if (stats.steps == 0) stats.first_loss = loss.item<double>();
      ++stats.steps;
      stats.samples += bs;
      pass_n += bs;
    }
    const double s = pass_sum.item<double>();
    loss_sum += s;
    stats.last_epoch_loss = s / static_cast<double>(pass_n);
    if (!std::isfinite(s)) {
      return absl::InternalError(
          absl::StrCat("local training diverged: loss ", stats.last_epoch_loss,
                       " in pass ", pass, " (lr ", p.lr, ")"));
    }
  }
  if (stats.samples > 0) stats.mean_loss = loss_sum / stats.samples;
  stats.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return stats;
}

}  // namespace

namespace train_internal {

Shard GatherShard(const Dataset& data, std::vector<int64_t> ids,
                  c10::Device dev) {
  // Gather the shard onto the device once unless the data already lives
  // there; `ids` then index into the gathered shard. The permutation drawn
  // from the batch-order rng depends only on the rng and the shard size, so
  // both give the same batches.
  Shard s{data.x, data.y, std::move(ids)};
  if (data.x.device() != dev) {
    at::Tensor idx = at::tensor(s.ids, at::kLong);
    s.x = data.x.index_select(0, idx).to(dev);
    s.y = data.y.index_select(0, idx).to(dev);
    for (size_t i = 0; i < s.ids.size(); ++i) s.ids[i] = static_cast<int64_t>(i);
  }
  s.y = s.y.to(at::kLong);
  return s;
}

std::vector<BatchRange> PassBatches(Net& model, const Shard& shard,
                                    int64_t batch_size) {
  const int64_t n = static_cast<int64_t>(shard.ids.size());
  bool fold_lone = false;
  if (n > 1 && n % batch_size == 1) {
    at::Tensor first = at::tensor(std::vector<int64_t>{shard.ids[0]}, at::kLong);
    fold_lone = !CanTrainOnOneSample(
        model, shard.x.index_select(0, first.to(shard.x.device())));
  }
  return BatchesOfPass(n, batch_size, fold_lone);
}

std::mt19937_64 BatchOrderRng(const LocalTrainParams& p) {
  return MakeRng(p.seed, SeedPurpose::kBatchOrder,
                 {static_cast<uint64_t>(p.round),
                  static_cast<uint64_t>(p.client),
                  static_cast<uint64_t>(p.member)});
}

double StepLearningRate(const TrainConfig& cfg, const LocalTrainParams& p,
                        int64_t pass, int64_t step) {
  if (cfg.lr_schedule != "cosine") return p.lr;
  return p.steps > 0 ? LocalLearningRate(cfg, p.lr, step, p.steps)
                     : LocalLearningRate(cfg, p.lr, pass, p.epochs);
}

void ScheduleStep(torch::optim::Optimizer& opt, const TrainConfig& cfg,
                  const LocalTrainParams& p, int64_t pass, int64_t step) {
  if (cfg.lr_schedule != "cosine") return;
  const double lr = StepLearningRate(cfg, p, pass, step);
  for (torch::optim::OptimizerParamGroup& g : opt.param_groups()) {
    g.options().set_lr(lr);
  }
}

}  // namespace train_internal

LocalTrainParams MakeLocalTrainParams(const TrainConfig& cfg, uint64_t seed,
                                      int64_t round, int64_t client,
                                      int64_t member, bool hpc,
                                      c10::Device device) {
  LocalTrainParams p;
  p.lr = RoundLearningRate(cfg, round);
  p.epochs = (hpc && cfg.hpc_local_epochs > 0) ? cfg.hpc_local_epochs
                                               : cfg.local_epochs;
  p.steps = cfg.local_steps;
  p.seed = seed;
  p.round = round;
  p.client = client;
  p.member = member;
  p.device = device;
  return p;
}

absl::StatusOr<TrainStats> LocalTrain(Net& model, const Dataset& data,
                                      const std::vector<int64_t>& indices,
                                      const TrainConfig& cfg,
                                      const LocalTrainParams& p) {
  SHEFL_RETURN_IF_ERROR(train_internal::CheckInputs(data, indices, cfg, p));
  if (indices.empty()) return TrainStats{};
  return TorchCallCatchAll("local training", [&] {
    return TrainLoop(model, data, indices, cfg, p);
  });
}

}  // namespace shefl
