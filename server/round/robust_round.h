// The coordinator's side of aggregation.robust (common/fed/robust.h has
// the bounds): applies them to a closed round's updates, counts what they
// did on /metrics, and returns the round's `robust` record for
// rounds.jsonl. Stateless; called by the round loop only.
#ifndef SHEFL_SERVER_ROUND_ROBUST_ROUND_H_
#define SHEFL_SERVER_ROUND_ROBUST_ROUND_H_

#include <vector>

#include <nlohmann/json.hpp>

#include "common/core/config.h"
#include "common/fed/aggregate.h"
#include "server/run/coordinator_metrics.h"

namespace shefl {

// Null when aggregation.robust is off (nothing is touched).
// `shards_bounded`: the clients whose claimed shard size is bounded
// (ClientReports::ShardsBounded), recorded beside.
nlohmann::json BoundRoundUpdates(const ExperimentConfig& config,
                                 std::vector<ModelAggregator>* aggregators,
                                 int64_t shards_bounded,
                                 CoordinatorMetrics* metrics);

// The largest weight magnitude in `w` (the round's record and /metrics
// show it over every member, defences on or off).
double MaxAbsWeight(const std::vector<float>& w);

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_ROBUST_ROUND_H_
