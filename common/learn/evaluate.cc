#include "common/learn/evaluate.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/learn/torch_call.h"

namespace shefl {
namespace {

// Checks member weights and returns them normalised (uniform when empty).
absl::StatusOr<std::vector<double>> MemberWeights(const std::vector<double>& w,
                                                  int64_t m) {
  if (w.empty()) return std::vector<double>(m, 1.0 / m);
  if (static_cast<int64_t>(w.size()) != m) {
    return absl::InvalidArgumentError(
        absl::StrCat(w.size(), " member weights for ", m, " members"));
  }
  double sum = 0;
  for (double x : w) {
    if (!(x >= 0) || !std::isfinite(x)) {
      return absl::InvalidArgumentError("member weights must be >= 0");
    }
    sum += x;
  }
  if (std::abs(sum - 1.0) > 1e-6) {
    return absl::InvalidArgumentError(
        absl::StrCat("member weights sum to ", sum, ", not 1"));
  }
  std::vector<double> out = w;
  for (double& x : out) x /= sum;
  return out;
}

// Running sums over batches of member log-probabilities [M, B, C]; Finish
// turns them into an EvalResult (definitions in the header).
class Accumulator {
 public:
  explicit Accumulator(std::vector<double> weights)
      : w_(std::move(weights)),
        member_correct_(w_.size(), 0),
        member_nll_(w_.size(), 0) {}

  void Add(const at::Tensor& member_logp, const at::Tensor& labels) {
    const at::Tensor logp = member_logp.to(at::kDouble);
    const at::Tensor y = labels.to(logp.device(), at::kLong);
    const int64_t m = logp.size(0);
    at::Tensor w = at::tensor(w_, logp.options()).view({m, 1, 1});
    at::Tensor ens_logp = at::logsumexp(logp + w.log(), 0);  // [B, C]
    at::Tensor p = ens_logp.exp();
    auto [conf, pred] = p.max(1);
    at::Tensor correct = pred.eq(y).to(at::kDouble);
    // Member probabilities of the ensemble's predicted class, [M, B].
    at::Tensor q = logp.gather(2, pred.view({1, -1, 1}).expand({m, -1, 1}))
                       .squeeze(2)
                       .exp();
    at::Tensor var = (w.view({m, 1}) * (q - conf.unsqueeze(0)).pow(2)).sum(0);
    // 004 Eq. 10's variance term over the whole distribution, and the
    // entropies (0 * log 0 taken as 0), per sample [B].
    at::Tensor pk = logp.exp();
    at::Tensor pred_var = (w * (pk - p.unsqueeze(0)).pow(2)).sum(2).sum(0);
    at::Tensor ent = -at::where(p > 0, p * ens_logp, 0.0).sum(1);
    at::Tensor member_ent = -at::where(pk > 0, pk * logp, 0.0).sum(2);  // [M, B]
    at::Tensor mutual = ent - (w.view({m, 1}) * member_ent).sum(0);
    const at::Tensor is_right = correct;
    const at::Tensor is_wrong = 1.0 - correct;
    at::Tensor mem_logp_y =
        logp.gather(2, y.view({1, -1, 1}).expand({m, -1, 1})).squeeze(2);
    at::Tensor mem_correct = logp.argmax(2).eq(y.unsqueeze(0)).sum(1);
    // A model whose outputs overflow gives NaN confidences; they go to the
    // first bin instead of an index out of range (clamp keeps NaN).
    at::Tensor bin = (conf * kEceBins)
                         .nan_to_num(0.0)
                         .ceil()
                         .sub(1)
                         .clamp(0, kEceBins - 1)
                         .to(at::kLong);
    at::Tensor bins = at::zeros({3, kEceBins}, logp.options());
    bins[0].index_add_(0, bin, at::ones_like(conf));
    bins[1].index_add_(0, bin, conf);
    bins[2].index_add_(0, bin, correct);

    n_ += y.size(0);
    correct_ += correct.sum().item<double>();
    nll_ -= ens_logp.gather(1, y.unsqueeze(1)).sum().item<double>();
    entropy_ += ent.sum().item<double>();
    variance_ += var.sum().item<double>();
    pred_var_ += pred_var.sum().item<double>();
    mutual_ += mutual.sum().item<double>();
    entropy_right_ += (ent * is_right).sum().item<double>();
    entropy_wrong_ += (ent * is_wrong).sum().item<double>();
    pred_var_right_ += (pred_var * is_right).sum().item<double>();
    pred_var_wrong_ += (pred_var * is_wrong).sum().item<double>();
    at::Tensor mc = mem_correct.to(at::kCPU, at::kDouble);
    at::Tensor mn = mem_logp_y.sum(1).to(at::kCPU);
    for (int64_t k = 0; k < m; ++k) {
      member_correct_[k] += mc[k].item<double>();
      member_nll_[k] -= mn[k].item<double>();
    }
    at::Tensor b = bins.to(at::kCPU);
    for (int j = 0; j < kEceBins; ++j) {
      bin_conf_[j] += b[1][j].item<double>();
      bin_correct_[j] += b[2][j].item<double>();
    }
  }

  EvalResult Finish() const {
    EvalResult r;
    r.samples = n_;
    const double n = static_cast<double>(std::max<int64_t>(n_, 1));
    r.ensemble_accuracy = correct_ / n;
    r.ensemble_nll = nll_ / n;
    r.mean_entropy = entropy_ / n;
    r.mean_member_variance = variance_ / n;
    r.predictive_variance = pred_var_ / n;
    r.mutual_information = mutual_ / n;
    r.num_correct = std::llround(correct_);
    const double right = std::max(correct_, 1.0);
    const double wrong = std::max(static_cast<double>(n_) - correct_, 1.0);
    r.entropy_correct = entropy_right_ / right;
    r.entropy_wrong = entropy_wrong_ / wrong;
    r.predictive_variance_correct = pred_var_right_ / right;
    r.predictive_variance_wrong = pred_var_wrong_ / wrong;
    for (int j = 0; j < kEceBins; ++j) {
      r.ece += std::abs(bin_correct_[j] - bin_conf_[j]) / n;
    }
    for (size_t k = 0; k < w_.size(); ++k) {
      r.member_accuracy.push_back(member_correct_[k] / n);
      r.member_nll.push_back(member_nll_[k] / n);
    }
    return r;
  }

 private:
  std::vector<double> w_;
  int64_t n_ = 0;
  double correct_ = 0, nll_ = 0, entropy_ = 0, variance_ = 0;
  double pred_var_ = 0, mutual_ = 0;
  double entropy_right_ = 0, entropy_wrong_ = 0;
  double pred_var_right_ = 0, pred_var_wrong_ = 0;
  std::vector<double> member_correct_, member_nll_;
  double bin_conf_[kEceBins] = {};
  double bin_correct_[kEceBins] = {};
};

absl::Status CheckMemberTensor(const at::Tensor& t, const at::Tensor& y) {
  if (!t.defined() || t.dim() != 3 || t.size(0) < 1 || t.size(2) < 1) {
    return absl::InvalidArgumentError(
        "member outputs must be [M, N, C] with M, C >= 1");
  }
  if (!y.defined() || y.dim() != 1 || y.size(0) != t.size(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("labels must be [N] with N = ", t.size(1)));
  }
  return absl::OkStatus();
}

absl::StatusOr<EvalResult> FromLogProbs(const at::Tensor& logp,
                                        const at::Tensor& labels,
                                        const std::vector<double>& weights) {
  absl::StatusOr<std::vector<double>> w = MemberWeights(weights, logp.size(0));
  if (!w.ok()) return w.status();
  Accumulator acc(*std::move(w));
  if (logp.size(1) > 0) acc.Add(logp, labels);
  return acc.Finish();
}

// Restores each model's train/eval mode when evaluation ends.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(const std::vector<std::shared_ptr<Net>>& models)
      : models_(models) {
    for (const auto& m : models_) {
      was_training_.push_back(m->is_training());
      m->eval();
    }
  }
  ~EvalModeGuard() {
    for (size_t k = 0; k < models_.size(); ++k) {
      models_[k]->train(was_training_[k]);
    }
  }

 private:
  const std::vector<std::shared_ptr<Net>>& models_;
  std::vector<bool> was_training_;
};

// The members' log-probabilities [M, b, C] (fp32) on one batch x.
at::Tensor BatchLogProbs(const std::vector<std::shared_ptr<Net>>& models,
                         const at::Tensor& x) {
  std::vector<at::Tensor> outs;
  for (const auto& m : models) outs.push_back(m->forward(x).to(at::kFloat));
  return at::stack(outs, 0).log_softmax(2);
}

// Batch b of `index` (its last batch may be short).
at::Tensor BatchIndex(const at::Tensor& index, int64_t b, int64_t batch) {
  return index.slice(0, b * batch, std::min(index.size(0), (b + 1) * batch));
}

int64_t NumBatches(const at::Tensor& index, int64_t batch) {
  return (index.size(0) + batch - 1) / batch;
}

// Runs all models over data[idx] in batches, feeding `acc` in batch order
// (on `par.threads` CPU threads: common/learn/eval_batches.h).
void RunModels(const std::vector<std::shared_ptr<Net>>& models,
               const Dataset& data, const at::Tensor& idx, int64_t batch,
               c10::Device device, const EvalThreads& par, Accumulator& acc) {
  c10::NoGradGuard no_grad;
  EvalModeGuard mode(models);
  for (const auto& m : models) m->to(device);
  const at::Tensor index = idx.to(data.x.device());
  EvalThreads threads = par;
  // The stacked path only where the caller handed one in (member_stack.h).
  std::unique_ptr<MemberStack> stack =
      par.stack ? par.stack(models, device) : nullptr;
  if (!device.is_cpu() || stack) threads.threads = 1;
  ForBatchesInOrder(
      NumBatches(index, batch), threads,
      [&](int64_t b) {
        const at::Tensor sel = BatchIndex(index, b, batch);
        at::Tensor y = data.y.index_select(0, sel.to(data.y.device()));
        const at::Tensor x = data.x.index_select(0, sel).to(device);
        return std::vector<at::Tensor>{
            stack ? stack->Forward(x).to(at::kFloat).log_softmax(2)
                  : BatchLogProbs(models, x),
            y.to(device)};
      },
      [&](std::vector<at::Tensor>& r) { acc.Add(r[0], r[1]); });
}

// Runs all models over data[idx] in batches; member log-probabilities
// [M, n, C] in fp32 on the CPU.
at::Tensor CollectLogProbs(const std::vector<std::shared_ptr<Net>>& models,
                           const Dataset& data, const at::Tensor& idx,
                           int64_t batch, c10::Device device) {
  c10::NoGradGuard no_grad;
  EvalModeGuard mode(models);
  for (const auto& m : models) m->to(device);
  const at::Tensor index = idx.to(data.x.device());
  std::vector<at::Tensor> parts;
  for (int64_t b = 0; b < NumBatches(index, batch); ++b) {
    at::Tensor x = data.x.index_select(0, BatchIndex(index, b, batch)).to(device);
    parts.push_back(BatchLogProbs(models, x).to(at::kCPU, at::kFloat));
  }
  if (parts.empty()) {
    return at::empty({static_cast<int64_t>(models.size()), 0, data.num_classes},
                     at::kFloat);
  }
  return at::cat(parts, 1);
}

// What every run over data needs; `indices`, when given, must name samples
// of `data`.
absl::Status CheckRun(const std::vector<std::shared_ptr<Net>>& models,
                      const Dataset& data, int64_t batch_size,
                      const std::vector<int64_t>& indices = {}) {
  if (models.empty()) return absl::InvalidArgumentError("no models");
  for (const auto& m : models) {
    if (!m) return absl::InvalidArgumentError("null model");
  }
  if (batch_size < 1) {
    return absl::InvalidArgumentError("eval batch_size must be >= 1");
  }
  if (!data.x.defined() || !data.y.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data set '", data.name, "' is empty"));
  }
  for (int64_t i : indices) {
    if (i < 0 || i >= data.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sample index ", i, " is out of range for '", data.name, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EvalResult> EvaluateFromLogits(
    const at::Tensor& logits, const at::Tensor& labels,
    const std::vector<double>& weights) {
  SHEFL_RETURN_IF_ERROR(CheckMemberTensor(logits, labels));
  return TorchCall("EvaluateFromLogits", [&] {
    return FromLogProbs(logits.to(at::kDouble).log_softmax(2), labels, weights);
  });
}

absl::StatusOr<EvalResult> EvaluateFromProbs(
    const at::Tensor& probs, const at::Tensor& labels,
    const std::vector<double>& weights) {
  SHEFL_RETURN_IF_ERROR(CheckMemberTensor(probs, labels));
  return TorchCall("EvaluateFromProbs", [&] {
    return FromLogProbs(probs.to(at::kDouble).clamp_min(1e-30).log(), labels,
                        weights);
  });
}

absl::StatusOr<EvalResult> EvaluateEnsemble(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    int64_t batch_size, int64_t max_samples, c10::Device device,
    const std::vector<double>& weights, const EvalThreads& par) {
  SHEFL_RETURN_IF_ERROR(CheckRun(models, data, batch_size));
  absl::StatusOr<std::vector<double>> w =
      MemberWeights(weights, static_cast<int64_t>(models.size()));
  if (!w.ok()) return w.status();
  int64_t n = data.size();
  if (max_samples > 0) n = std::min(n, max_samples);
  return TorchCall("EvaluateEnsemble", [&] {
    Accumulator acc(*std::move(w));
    RunModels(models, data, at::arange(n, at::kLong), batch_size, device, par,
              acc);
    return acc.Finish();
  });
}

absl::StatusOr<std::vector<double>> MemberLosses(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, int64_t batch_size,
    c10::Device device) {
  SHEFL_RETURN_IF_ERROR(CheckRun(models, data, batch_size, indices));
  return TorchCall("MemberLosses", [&] {
    Accumulator acc(std::vector<double>(models.size(), 1.0 / models.size()));
    RunModels(models, data, at::tensor(indices, at::kLong), batch_size, device,
              EvalThreads{}, acc);
    return acc.Finish().member_nll;
  });
}

absl::StatusOr<at::Tensor> MemberLogProbs(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, int64_t batch_size,
    c10::Device device) {
  SHEFL_RETURN_IF_ERROR(CheckRun(models, data, batch_size, indices));
  return TorchCall("MemberLogProbs", [&] {
    return CollectLogProbs(models, data, at::tensor(indices, at::kLong),
                           batch_size, device);
  });
}

}  // namespace shefl
