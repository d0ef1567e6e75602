#include "server/round/fens_ensemble.h"

#include <ATen/ATen.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"
#include "common/fed/fens_split.h"
#include "common/fed/partition.h"
#include "common/learn/fens_aggregators.h"
#include "common/learn/flat_state.h"

namespace shefl {

absl::StatusOr<std::vector<ModelSnapshot>> FensMembers(
    const std::vector<float>& global, const std::vector<ReceivedUpdate>& updates,
    std::vector<int64_t>* clients) {
  std::vector<const ReceivedUpdate*> order;
  for (const ReceivedUpdate& u : updates) order.push_back(&u);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return a->client_id < b->client_id;
  });
  std::vector<ModelSnapshot> members;
  clients->clear();
  for (const ReceivedUpdate* u : order) {
    SHEFL_RETURN_IF_ERROR(ValidateSparseDelta(u->delta, global.size()));
    auto w = std::make_shared<std::vector<float>>(global);
    for (size_t i = 0; i < u->delta.nnz(); ++i)
      (*w)[u->delta.indices[i]] += u->delta.values[i];
    members.push_back(std::move(w));
    clients->push_back(u->client_id);
  }
  return members;
}

absl::StatusOr<std::unique_ptr<FensEnsemble>> FensEnsemble::Create(
    const ExperimentConfig& config, c10::Device device) {
  auto f = std::unique_ptr<FensEnsemble>(new FensEnsemble());
  f->config_ = config;
  f->device_ = device;
  SHEFL_ASSIGN_OR_RETURN(auto train,
                         LoadDataset(config.data, /*train=*/true, config.seed));
  SHEFL_ASSIGN_OR_RETURN(auto labels, LabelVector(train));
  const ProxySplit split = SplitProxy(static_cast<int64_t>(labels.size()),
                                      config.fens.proxy_fraction, config.seed);
  SHEFL_ASSIGN_OR_RETURN(f->proxy_, Subset(train, split.proxy));
  // The per-class counts the weighted aggregator needs: the coordinator
  // computes the partition from the seed, as each daemon does (a client
  // sends no label histogram; docs/FENS.md). With eval.client_holdout the
  // counts are of what the daemon trains on, its held-out part left out.
  if (config.eval.client_holdout > 0) {
    SHEFL_ASSIGN_OR_RETURN(f->clients_, ClientEvaluator::Create(config));
  }
  SHEFL_ASSIGN_OR_RETURN(auto shards,
                         AllTrainingIndices(config, labels, train.num_classes));
  for (size_t i = 0; i < shards.size(); ++i) {
    const auto& shard =
        f->clients_ ? f->clients_->split(static_cast<int64_t>(i)).train
                    : shards[i];
    f->label_counts_.push_back(LabelCounts(labels, shard, train.num_classes));
  }
  SHEFL_ASSIGN_OR_RETURN(
      f->test_, LoadDataset(config.data, /*train=*/false, config.seed));
  if (config.eval.max_test_samples > 0 &&
      config.eval.max_test_samples < f->test_.size()) {
    std::vector<int64_t> first(config.eval.max_test_samples);
    for (size_t i = 0; i < first.size(); ++i) first[i] = i;
    SHEFL_ASSIGN_OR_RETURN(f->test_, Subset(f->test_, first));
  }
  SHEFL_ASSIGN_OR_RETURN(auto shape, ShapeOf(f->test_, config.data.text_vocab));
  SHEFL_ASSIGN_OR_RETURN(f->net_, MakeModel(config.model.name, shape));
  f->net_->to(device);
  f->net_->eval();
  return f;
}

absl::StatusOr<at::Tensor> FensEnsemble::MemberProbs(
    const std::vector<ModelSnapshot>& members, const Dataset& data) {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> out;
  const int64_t batch = config_.eval.batch_size;
  for (const ModelSnapshot& w : members) {
    SHEFL_RETURN_IF_ERROR(Unflatten(*w, *net_));
    std::vector<at::Tensor> parts;
    for (int64_t b = 0; b < data.size(); b += batch) {
      const at::Tensor x =
          data.x.slice(0, b, std::min(data.size(), b + batch)).to(device_);
      parts.push_back(
          at::softmax(net_->forward(x), 1).to(at::kCPU, at::kFloat));
    }
    out.push_back(parts.empty()
                      ? at::empty({0, data.num_classes}, at::kFloat)
                      : at::cat(parts, 0));
  }
  return at::stack(out, 0);
}

absl::StatusOr<FensResult> FensEnsemble::Evaluate(
    const std::vector<ModelSnapshot>& members,
    const std::vector<int64_t>& clients) {
  if (members.empty() || members.size() != clients.size())
    return absl::InvalidArgumentError(absl::StrCat(
        "FENS: ", members.size(), " members for ", clients.size(), " clients"));
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  FensResult r;
  std::vector<std::vector<int64_t>> counts;
  for (int64_t c : clients) {
    if (c < 0 || c >= static_cast<int64_t>(label_counts_.size()))
      return absl::InvalidArgumentError(absl::StrCat("FENS: no client ", c));
    counts.push_back(label_counts_[c]);
  }
  SHEFL_ASSIGN_OR_RETURN(auto proxy_probs, MemberProbs(members, proxy_));
  SHEFL_ASSIGN_OR_RETURN(
      auto agg,
      FitAggregator(config_.fens, config_.seed, proxy_probs, proxy_.y, counts));
  r.fit_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  r.aggregator = agg->name();
  r.aggregator_params = agg->num_params();
  r.proxy_samples = proxy_.size();

  SHEFL_ASSIGN_OR_RETURN(auto test_probs, MemberProbs(members, test_));
  const at::Tensor labels = test_.y.to(at::kCPU);
  SHEFL_ASSIGN_OR_RETURN(auto mean, EvaluateFromProbs(test_probs, labels));
  r.mean = mean;
  const at::Tensor combined = agg->Combine(test_probs).unsqueeze(0);
  SHEFL_ASSIGN_OR_RETURN(r.ensemble, EvaluateFromProbs(combined, labels));
  r.ensemble.member_accuracy = r.mean.member_accuracy;
  r.ensemble.member_nll = r.mean.member_nll;
  r.ensemble.mean_member_variance = r.mean.mean_member_variance;
  if (clients_) {
    SHEFL_ASSIGN_OR_RETURN(auto held,
                           Subset(clients_->train(), clients_->AllHeldOut()));
    SHEFL_ASSIGN_OR_RETURN(auto held_probs, MemberProbs(members, held));
    SHEFL_ASSIGN_OR_RETURN(r.ensemble.client_level,
                           clients_->ScoreHeldOut(agg->Combine(held_probs)));
  }
  return r;
}

}  // namespace shefl
