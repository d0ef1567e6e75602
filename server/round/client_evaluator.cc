#include "server/round/client_evaluator.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"
#include "common/fed/fens_split.h"
#include "common/learn/torch_call.h"

namespace shefl {
namespace {

// Mean cross-entropy of each member over the first `n` samples of `logp`
// ([M, >= n, C]) whose labels are `y` ([n]).
std::vector<double> LossesOf(const at::Tensor& logp, const at::Tensor& y,
                             int64_t n) {
  const int64_t m = logp.size(0);
  at::Tensor part = logp.slice(1, 0, n).to(at::kDouble);
  at::Tensor ly = part.gather(2, y.slice(0, 0, n).view({1, -1, 1}).expand({m, -1, 1}))
                     .squeeze(2);
  at::Tensor mean = (-ly).mean(1);
  std::vector<double> out(m);
  for (int64_t k = 0; k < m; ++k) out[k] = mean[k].item<double>();
  return out;
}

double Entropy(const std::vector<double>& a) {
  double h = 0;
  for (double x : a)
    if (x > 0) h -= x * std::log(x);
  return h;
}

}  // namespace

bool ClientEvaluator::Wanted(const ExperimentConfig& config) {
  return config.eval.client_holdout > 0 || config.eval.gamma > 0;
}

absl::StatusOr<std::unique_ptr<ClientEvaluator>> ClientEvaluator::Create(
    const ExperimentConfig& config) {
  if (config.partition.scheme == "own") {
    return absl::FailedPreconditionError(
        "eval.client_holdout and eval.gamma need the coordinator to compute "
        "each client's shard; partition.scheme 'own' keeps shards on the "
        "daemons");
  }
  auto e = std::unique_ptr<ClientEvaluator>(new ClientEvaluator());
  e->holdout_ = config.eval.client_holdout;
  e->gamma_ = config.eval.gamma;
  SHEFL_ASSIGN_OR_RETURN(e->train_,
                         LoadDataset(config.data, /*train=*/true, config.seed));
  SHEFL_ASSIGN_OR_RETURN(auto labels, LabelVector(e->train_));
  // The daemons' own shards (FENS partitions what its proxy split leaves).
  SHEFL_ASSIGN_OR_RETURN(
      auto shards, AllTrainingIndices(config, labels, e->train_.num_classes));
  for (size_t i = 0; i < shards.size(); ++i) {
    SHEFL_ASSIGN_OR_RETURN(auto s,
                           SplitClientShard(shards[i], e->holdout_, config.seed,
                                            static_cast<int64_t>(i)));
    e->splits_.push_back(std::move(s));
  }
  return e;
}

absl::StatusOr<ClientLevelResult> ClientEvaluator::Evaluate(
    const std::vector<std::shared_ptr<Net>>& nets, int64_t batch_size,
    c10::Device device) const {
  return TorchCall("client-level evaluation",
                   [&] { return EvaluateClients(nets, batch_size, device); });
}

absl::StatusOr<ClientLevelResult> ClientEvaluator::EvaluateClients(
    const std::vector<std::shared_ptr<Net>>& nets, int64_t batch_size,
    c10::Device device) const {
  ClientLevelResult r;
  r.evaluated = holdout_ > 0;
  r.personalised = gamma_ > 0;
  std::vector<double> uniform_acc, personal_acc;
  int64_t weighted = 0;  // clients with personal weights
  for (size_t i = 0; i < splits_.size(); ++i) {
    const ClientSplit& s = splits_[i];
    // The losses need the training part; the accuracies the held-out one.
    std::vector<int64_t> idx;
    if (r.personalised) idx = s.train;
    const auto n_train = static_cast<int64_t>(idx.size());
    if (r.evaluated) idx.insert(idx.end(), s.held_out.begin(), s.held_out.end());
    if (idx.empty()) continue;
    SHEFL_ASSIGN_OR_RETURN(
        auto logp, MemberLogProbs(nets, train_, idx, batch_size, device));
    const at::Tensor y =
        train_.y.index_select(0, at::tensor(idx, at::kLong).to(train_.y.device()))
            .to(at::kCPU, at::kLong);
    std::vector<double> alpha;
    if (r.personalised) {
      std::vector<double> losses(nets.size(), 0.0);
      if (n_train > 0) losses = LossesOf(logp, y, n_train);
      auto a = PersonalisedWeights(losses, gamma_);
      if (!a.ok())
        return absl::Status(a.status().code(),
                            absl::StrCat("client ", i, ": ", a.status().message()));
      alpha = *std::move(a);
      r.weight_entropy += Entropy(alpha);
      r.weight_max += *std::max_element(alpha.begin(), alpha.end());
      ++weighted;
    }
    if (!r.evaluated || s.held_out.empty()) continue;
    const at::Tensor held = logp.slice(1, n_train);
    const at::Tensor held_y = y.slice(0, n_train);
    SHEFL_ASSIGN_OR_RETURN(auto u, EvaluateFromLogits(held, held_y));
    uniform_acc.push_back(u.ensemble_accuracy);
    r.samples += u.samples;
    if (r.personalised) {
      SHEFL_ASSIGN_OR_RETURN(auto p, EvaluateFromLogits(held, held_y, alpha));
      personal_acc.push_back(p.ensemble_accuracy);
    }
  }
  if (weighted > 0) {
    r.weight_entropy /= static_cast<double>(weighted);
    r.weight_max /= static_cast<double>(weighted);
  }
  r.uniform = SummariseClients(uniform_acc);
  r.personal = SummariseClients(personal_acc);
  return r;
}

std::vector<int64_t> ClientEvaluator::AllHeldOut() const {
  std::vector<int64_t> all;
  for (const ClientSplit& s : splits_)
    all.insert(all.end(), s.held_out.begin(), s.held_out.end());
  return all;
}

absl::StatusOr<ClientLevelResult> ClientEvaluator::ScoreHeldOut(
    const at::Tensor& probs) const {
  const std::vector<int64_t> rows = AllHeldOut();
  const auto n = static_cast<int64_t>(rows.size());
  if (probs.dim() != 2 || probs.size(0) != n)
    return absl::InvalidArgumentError(absl::StrCat(
        "client-level scoring: ", n, " held-out rows, probabilities of shape ",
        probs.dim() == 2 ? absl::StrCat(probs.size(0), "x", probs.size(1))
                         : absl::StrCat(probs.dim(), "-d")));
  ClientLevelResult r;
  r.evaluated = true;
  const at::Tensor pred = probs.argmax(1).to(at::kCPU, at::kLong);
  const at::Tensor y =
      train_.y.index_select(0, at::tensor(rows, at::kLong).to(train_.y.device()))
          .to(at::kCPU, at::kLong);
  const at::Tensor right = pred.eq(y);
  std::vector<double> accuracy;
  int64_t at_row = 0;
  for (const ClientSplit& s : splits_) {
    const auto k = static_cast<int64_t>(s.held_out.size());
    if (k == 0) continue;
    accuracy.push_back(
        right.slice(0, at_row, at_row + k).sum().item<double>() /
        static_cast<double>(k));
    at_row += k;
  }
  r.samples = n;
  r.uniform = SummariseClients(accuracy);
  return r;
}

}  // namespace shefl
