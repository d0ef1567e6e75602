// The iterative round (every method but FENS): the scheduler's cohort and
// assignment, then the closed round's updates bounded by the robust
// rules (robust_round.h) and folded into the M global models, through the
// server optimiser when one is set. A model whose aggregate has a
// non-finite weight is not published: the previous one stays.
// Not thread-safe: the round loop's (see RoundKind).
#ifndef SHEFL_SERVER_ROUND_ITERATIVE_ROUND_H_
#define SHEFL_SERVER_ROUND_ITERATIVE_ROUND_H_

#include <memory>
#include <vector>

#include "server/round/round_kind.h"

namespace shefl {

class IterativeRound final : public RoundKind {
 public:
  explicit IterativeRound(const ExperimentConfig& config) : config_(config) {}

  absl::Status CheckCheckpoint(int64_t num_models) const override;
  absl::Status Bind(const RoundContext& context) override;
  RoundPlan Plan(int64_t t, const Availability& available) override;
  absl::StatusOr<ClosedRound> Close(
      std::vector<ModelAggregator>& aggregators) override;
  void AddSummary(const nlohmann::json& last_line,
                  nlohmann::json* summary) const override;

 private:
  // Publishes each member's aggregate; how many were not published.
  absl::StatusOr<int64_t> Aggregate(std::vector<ModelAggregator>& aggs);

  const ExperimentConfig config_;
  RoundContext ctx_;
  // aggregation.server_optimizer's state (common/fed/server_optimizer.h).
  std::unique_ptr<ServerOptimizer> server_opt_;
  double max_abs_weight_ = 0;  // over the members, after Aggregate
};

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_ITERATIVE_ROUND_H_
