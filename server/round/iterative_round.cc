#include "server/round/iterative_round.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "server/round/robust_round.h"

namespace shefl {

absl::Status IterativeRound::CheckCheckpoint(int64_t num_models) const {
  if (num_models != config_.model.num_models)
    return absl::FailedPreconditionError(absl::StrCat(
        "--resume: the checkpoint holds ", num_models,
        " models, model.num_models is ", config_.model.num_models,
        "; a run cannot change it (start a new run with --out)"));
  return absl::OkStatus();
}

absl::Status IterativeRound::Bind(const RoundContext& context) {
  ctx_ = context;
  SHEFL_ASSIGN_OR_RETURN(
      auto opt,
      ServerOptimizer::Create(config_.aggregation, config_.model.num_models,
                              ctx_.state->store->dim()));
  server_opt_ = std::make_unique<ServerOptimizer>(std::move(opt));
  if (server_opt_->active() && ctx_.first_round > 0)
    return server_opt_->Load(
        ctx_.results->server_optimizer_path(ctx_.first_round),
        ctx_.first_round);
  return absl::OkStatus();
}

RoundPlan IterativeRound::Plan(int64_t t, const Availability& available) {
  return ctx_.scheduler->Plan(t, available, ctx_.capacity->ForRound());
}

absl::StatusOr<ClosedRound> IterativeRound::Close(
    std::vector<ModelAggregator>& aggregators) {
  CoordinatorState& s = *ctx_.state;
  const nlohmann::json robust =
      BoundRoundUpdates(config_, &aggregators, s.reports.ShardsBounded(),
                        &s.metrics);
  SHEFL_ASSIGN_OR_RETURN(auto not_published, Aggregate(aggregators));
  ClosedRound closed;
  std::tie(closed.models, closed.versions) = s.store->Snapshot();
  closed.fields["models_not_published"] = not_published;
  closed.fields["max_abs_weight"] = max_abs_weight_;
  if (!robust.is_null()) closed.fields["robust"] = robust;
  if (server_opt_->active())
    closed.optimizer = std::make_shared<const ServerOptimizer>(*server_opt_);
  Evaluator* evaluator = ctx_.evaluator;
  closed.evaluate = [evaluator, models = closed.models](nlohmann::json*) {
    return evaluator->Evaluate(models);
  };
  return closed;
}

absl::StatusOr<int64_t> IterativeRound::Aggregate(
    std::vector<ModelAggregator>& aggs) {
  CoordinatorState& s = *ctx_.state;
  int64_t not_published = 0;
  max_abs_weight_ = 0;  // over every member, updated this round or not
  for (size_t m = 0; m < aggs.size(); ++m) {
    if (aggs[m].num_updates() == 0) {
      max_abs_weight_ = std::max(max_abs_weight_, MaxAbsWeight(*s.store->Get(m)));
      continue;
    }
    std::vector<float> w = *s.store->Get(m);
    if (server_opt_->active()) {
      // The rule's step alone, then the optimiser's move.
      std::vector<float> delta(w.size(), 0.0f);
      SHEFL_RETURN_IF_ERROR(aggs[m].ApplyTo(&delta));
      server_opt_->Step(static_cast<int64_t>(m), delta, &w);
    } else if (auto st = aggs[m].ApplyTo(&w); !st.ok()) {
      return st;
    }
    // Each update was finite, yet their weighted sum can still overflow:
    // such a model is never published, the previous one stays.
    const auto bad = std::find_if(w.begin(), w.end(),
                                  [](float v) { return !std::isfinite(v); });
    if (bad != w.end()) {
      s.metrics.CountModelNotPublished();
      ++not_published;
      LogLine("coordinator",
              absl::StrCat("model ", m, ": aggregate has a non-finite weight "
                           "at index ", bad - w.begin(),
                           "; kept the previous model"));
      continue;
    }
    max_abs_weight_ = std::max(max_abs_weight_, MaxAbsWeight(w));
    s.store->Publish(m, std::move(w));
  }
  s.metrics.SetMaxAbsWeight(max_abs_weight_);
  return not_published;
}

void IterativeRound::AddSummary(const nlohmann::json&,
                                nlohmann::json* summary) const {
  (*summary)["model_sha256"] = ctx_.state->store->Digests();
}

}  // namespace shefl
