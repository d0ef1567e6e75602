// What the coordinator decides for each model's secure-aggregation session
// of a round (aggregation.secure; docs/DESIGN.md, "Secure aggregation"):
// the parties (a daemon per party, its id the lowest client id it hosts
// for the model), each task's public weight (its coefficient in the
// aggregation rule, had every planned update arrived, over the largest
// one), the support C_t from the public accumulator and the round seed,
// and the session's parameters. After the round it folds each published
// global update into the accumulator.
// Not thread-safe: the round loop's.
#ifndef SHEFL_SERVER_SOURCE_SECURE_PLANNER_H_
#define SHEFL_SERVER_SOURCE_SECURE_PLANNER_H_

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/fed/common_support.h"
#include "common/fed/schedule.h"
#include "common/fed/vote_support.h"
#include "server/shared/coordinator_state.h"
#include "server/state/secure_session.h"

namespace shefl {

class SecurePlanner {
 public:
  // `small`: the model's trainable tensors of at most secure.whole_max
  // entries (the layout support's W); `grids`: the larger ones, which
  // the vote (secure.vote) counts in.
  SecurePlanner(const ExperimentConfig& config, uint64_t dim,
                std::string run_id, std::vector<TensorSpan> small = {},
                std::vector<TensorGrid> grids = {});

  // The round's sessions by model, not started. A model trained by fewer
  // daemons than secure.min_parties gets none (logged): nothing of it is
  // aggregated this round.
  CoordinatorState::SecureSessions Plan(const RoundPlan& plan, int64_t round,
                                        const CoordinatorState& state,
                                        SecureSession::Clock::time_point deadline,
                                        const SecureSession::Send& send);

  // The public accumulators, one per model (for the checkpoint), and back.
  const std::vector<std::vector<float>>& accumulators() const {
    return accumulators_;
  }
  // InvalidArgument unless one of dim() floats per model.
  absl::Status SetAccumulators(std::vector<std::vector<float>> a);

  // Model `model` moved from `before` to `after` this round.
  void Published(int64_t model, const std::vector<float>& before,
                 const std::vector<float>& after);

  // A finished session's vote counts for `model`: its next support's V.
  void Voted(int64_t model, std::vector<uint32_t> counts);
  // Each model's last vote (empty: none yet), for the checkpoint; and back.
  const std::vector<std::vector<uint32_t>>& votes() const { return votes_; }
  absl::Status SetVotes(std::vector<std::vector<uint32_t>> votes);

 private:
  // The model's plan, or nullopt (logged) when it has too few parties.
  std::optional<SecureModelPlan> PlanModel(const RoundPlan& plan,
                                           int64_t round, int64_t model,
                                           const CoordinatorState& state);
  // Each task's public weight, by party; sets plan->scale.
  void Weigh(const RoundPlan& plan, int64_t model,
             const CoordinatorState& state, SecureModelPlan* out) const;

  const ExperimentConfig config_;
  const uint64_t dim_;
  const std::string run_id_;
  const std::vector<TensorSpan> small_;
  const std::vector<TensorGrid> grids_;  // empty without a vote
  std::vector<std::vector<float>> accumulators_;  // one per model
  std::vector<std::vector<uint32_t>> votes_;      // one per model
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_SECURE_PLANNER_H_
