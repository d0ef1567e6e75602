// The training loop of LocalTrain (common/learn/train.cc) on the stacked
// members: the same batches, optimiser, schedule and loss definitions, one
// step for all members.
#include "common/learn_stacked/stacked_train.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"
#include "common/learn/lean_sgd.h"
#include "common/learn/precision.h"
#include "common/learn/torch_call.h"
#include "common/learn/train_internal.h"
#include "common/learn_stacked/stacked_members.h"

namespace shefl {
namespace {

// Each member's mean cross-entropy over the batch: logits [M, B, K], y [B]
// -> [M]. Summed, their gradient is each member's own.
at::Tensor MemberLosses(const at::Tensor& logits, const at::Tensor& y) {
  const int64_t m = logits.size(0), b = logits.size(1);
  at::Tensor logp = at::log_softmax(logits, 2);
  at::Tensor picked = logp.gather(2, y.view({1, b, 1}).expand({m, b, 1}));
  return -picked.squeeze(2).mean(1);
}

std::vector<double> ToDoubles(const at::Tensor& t) {
  at::Tensor c = t.detach().to(c10::kCPU, at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(),
                             c.data_ptr<double>() + c.numel());
}

// The training loop of LocalTrain (common/learn/train.cc), one step for all
// members; torch errors propagate to LocalTrainStacked.
absl::StatusOr<std::vector<TrainStats>> StackedLoop(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p, const std::vector<at::Tensor>& prox_references) {
  const auto start = std::chrono::steady_clock::now();
  const c10::Device dev = p.device;
  const int64_t m = static_cast<int64_t>(models.size());
  for (const auto& model : models) {
    model->to(dev);
    model->train(true);
  }
  train_internal::Shard shard = train_internal::GatherShard(data, indices, dev);
  absl::StatusOr<std::unique_ptr<StackedMembers>> stacked =
      StackedMembers::Create(models, dev);
  if (!stacked.ok()) return stacked.status();
  StackedMembers& net = **stacked;
  net.train(true);
  const std::vector<at::Tensor> params = net.parameters();
  std::vector<at::Tensor> refs;
  if (cfg.prox_mu > 0 && !prox_references.empty()) {
    absl::StatusOr<std::vector<at::Tensor>> r =
        net.StackReferences(prox_references);
    if (!r.ok()) return r.status();
    refs = *std::move(r);
  }
  auto opt = train_internal::MakeOptimizer(cfg, p.lr, params);
  std::mt19937_64 rng = train_internal::BatchOrderRng(p);
  std::vector<int64_t>& ids = shard.ids;
  const std::vector<train_internal::BatchRange> batches =
      train_internal::PassBatches(*models[0], shard, cfg.batch_size);
  const bool by_steps = p.steps > 0;

  std::vector<TrainStats> stats(m);
  std::vector<double> loss_sum(m, 0.0);
  int64_t steps = 0, samples = 0;
  for (int64_t pass = 0; by_steps ? steps < p.steps : pass < p.epochs; ++pass) {
    Shuffle(ids, rng);
    at::Tensor order = at::tensor(ids, at::kLong).to(dev);
    at::Tensor pass_sum = at::zeros({m}, shard.x.options().dtype(at::kFloat));
    int64_t pass_n = 0;
    for (const train_internal::BatchRange& r : batches) {
      if (by_steps && steps >= p.steps) break;
      at::Tensor idx = order.slice(0, r.first, r.second);
      at::Tensor x = shard.x.index_select(0, idx);
      at::Tensor y = shard.y.index_select(0, idx);
      train_internal::ScheduleStep(*opt, cfg, p, pass, steps);
      DropGrads(*opt);
      at::Tensor losses;  // [M]
      {
        AutocastScope autocast(cfg.precision, dev);  // bf16: forward and loss
        losses = MemberLosses(net.Forward(x), y).to(at::kFloat);
      }
      at::Tensor total = losses.sum();
      if (!refs.empty()) total = total + StackedProxLoss(params, refs, cfg.prox_mu);
      total.backward();
      opt->step();
      const int64_t bs = r.second - r.first;
      pass_sum += losses.detach().to(at::kFloat) * static_cast<double>(bs);
      if (steps == 0) {
        const std::vector<double> first = ToDoubles(losses);
        for (int64_t k = 0; k < m; ++k) stats[k].first_loss = first[k];
      }
      ++steps;
      samples += bs;
      pass_n += bs;
    }
    const std::vector<double> s = ToDoubles(pass_sum);
    for (int64_t k = 0; k < m; ++k) {
      loss_sum[k] += s[k];
      stats[k].last_epoch_loss = s[k] / static_cast<double>(pass_n);
      if (!std::isfinite(s[k])) {
        return absl::InternalError(absl::StrCat(
            "member ", k, ": local training diverged: loss ",
            stats[k].last_epoch_loss, " in pass ", pass, " (lr ", p.lr, ")"));
      }
    }
  }
  SHEFL_RETURN_IF_ERROR(net.WriteBack());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (int64_t k = 0; k < m; ++k) {
    stats[k].steps = steps;
    stats[k].samples = samples;
    if (samples > 0) stats[k].mean_loss = loss_sum[k] / samples;
    stats[k].seconds = seconds / static_cast<double>(m);
  }
  return stats;
}

}  // namespace

at::Tensor StackedProxLoss(const std::vector<at::Tensor>& params,
                           const std::vector<at::Tensor>& refs, double mu) {
  at::Tensor sum = (params[0] - refs[0]).pow(2).sum();
  for (size_t i = 1; i < params.size(); ++i) {
    sum = sum + (params[i] - refs[i]).pow(2).sum();
  }
  return sum * (mu / 2);
}

absl::StatusOr<std::vector<TrainStats>> LocalTrainStacked(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p, const std::vector<at::Tensor>& prox_references) {
  if (absl::Status st = train_internal::CheckInputs(data, indices, cfg, p);
      !st.ok()) {
    return st;
  }
  if (!prox_references.empty() && prox_references.size() != models.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LocalTrainStacked: ", prox_references.size(),
                     " prox references for ", models.size(), " models"));
  }
  if (models.empty()) return std::vector<TrainStats>{};
  for (size_t k = 0; k < models.size(); ++k) {
    if (!models[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("LocalTrainStacked: member ", k, " is null"));
    }
  }
  SHEFL_RETURN_IF_ERROR(StackedMembers::Supports(*models[0]));
  if (indices.empty()) return std::vector<TrainStats>(models.size());
  if (cfg.prox_mu > 0 && !prox_references.empty()) {
    const bool first = prox_references[0].defined();
    for (const at::Tensor& r : prox_references) {
      if (r.defined() != first) {
        return absl::InvalidArgumentError(
            "LocalTrainStacked: prox references must be all defined or all "
            "undefined");
      }
    }
  }
  std::vector<at::Tensor> refs = prox_references;
  if (!refs.empty() && !refs[0].defined()) refs.clear();
  return TorchCallCatchAll("stacked local training", [&] {
    return StackedLoop(models, data, indices, cfg, p, refs);
  });
}

}  // namespace shefl
