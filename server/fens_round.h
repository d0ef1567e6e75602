// The coordinator's FENS round (002, method: fens): who trains (every
// connected client, the one initial model, dense), and what the round's
// line and the summary add about the ensemble and its aggregator.
#ifndef SHEFL_SERVER_FENS_ROUND_H_
#define SHEFL_SERVER_FENS_ROUND_H_

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/core/config.h"
#include "common/fed/schedule.h"
#include "server/fens_ensemble.h"

namespace shefl {

// Every client `available` accepts (all when null), ascending, trains
// model 0 with budget `k` (d: dense) as its own tier.
RoundPlan FensPlan(const ExperimentConfig& config, int64_t k,
                   const Availability& available = nullptr);

// What a FENS round's line adds (docs/FENS.md):
//   aggregator_params      q, the aggregator's fp32 numbers
//   aggregator_bytes       4 q: one copy of the aggregator
//   aggregator_bytes_down  clients * 4 q: the aggregator sent to every client
//                          for inference (002's communication cost; counted,
//                          not sent: no message carries it yet)
//   deployment_bytes_down  clients * (members * 4 d + 4 q): the whole global
//                          model (members and aggregator) to every client,
//                          002 Table 1's inference cost
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

#endif  // SHEFL_SERVER_FENS_ROUND_H_
