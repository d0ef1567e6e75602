// The one-shot round of FENS (method: fens): every connected client
// trains the one initial model once, dense; the coordinator keeps each
// client's model (global + its update) as a member instead of folding the
// updates, and its record fits and scores the aggregator over them
// (fens_ensemble.h). What the round's line and the summary add about the
// ensemble and its aggregator is below.
// Not thread-safe: the round loop's (see RoundKind).
#ifndef SHEFL_SERVER_ROUND_FENS_ROUND_H_
#define SHEFL_SERVER_ROUND_FENS_ROUND_H_

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/core/config.h"
#include "common/fed/schedule.h"
#include "server/round/fens_ensemble.h"
#include "server/round/round_kind.h"

namespace shefl {

class FensRound final : public RoundKind {
 public:
  static absl::StatusOr<std::unique_ptr<FensRound>> Create(
      const ExperimentConfig& config);

  // A checkpoint holds the client models, as many as arrived.
  absl::Status CheckCheckpoint(int64_t) const override {
    return absl::OkStatus();
  }
  absl::Status Bind(const RoundContext& context) override;
  RoundPlan Plan(int64_t t, const Availability& available) override;
  absl::StatusOr<ClosedRound> Close(
      std::vector<ModelAggregator>& aggregators) override;
  void AddSummary(const nlohmann::json& last_line,
                  nlohmann::json* summary) const override;

 private:
  explicit FensRound(const ExperimentConfig& config) : config_(config) {}

  const ExperimentConfig config_;
  RoundContext ctx_;
  std::shared_ptr<FensEnsemble> ensemble_;  // shared with the record
  // The members this process made (empty after a resume that runs no
  // round: the checkpoint's models are then the members).
  std::vector<ModelSnapshot> members_;
};

// Every client `available` accepts (all when null), ascending, trains
// model 0 with budget `k` (d: dense) as its own tier.
RoundPlan FensPlan(const ExperimentConfig& config, int64_t k,
                   const Availability& available = nullptr);

// What a FENS round's line adds (docs/FENS.md):
//   aggregator_params      q, the aggregator's fp32 numbers
//   aggregator_bytes       4 q: one copy of the aggregator
//   aggregator_bytes_down  clients * 4 q: the aggregator sent to every client
//                          for inference (the FENS paper's communication cost; counted,
//                          not sent: no message carries it yet)
//   deployment_bytes_down  clients * (members * 4 d + 4 q): the whole global
//                          model (members and aggregator) to every client,
//                          the FENS paper's Table 1's inference cost
//   fens                   {aggregator, members, member_clients,
//                          proxy_samples, aggregator_accuracy,
//                          aggregator_loss, mean_accuracy, mean_loss,
//                          fit_seconds}
void AddFensFields(const ExperimentConfig& config, uint64_t dim,
                   const FensResult& r, const std::vector<int64_t>& clients,
                   nlohmann::json* line);

// summary.json's FENS figures from the round's line (also after a resume):
// its `fens` object and total_aggregator_bytes_down,
// total_deployment_bytes_down.
void AddFensSummary(const nlohmann::json& line, nlohmann::json* summary);

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_FENS_ROUND_H_
