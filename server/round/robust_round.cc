#include "server/round/robust_round.h"

#include <cmath>

#include "common/fed/robust.h"

namespace shefl {

nlohmann::json BoundRoundUpdates(const ExperimentConfig& config,
                                 std::vector<ModelAggregator>* aggregators,
                                 int64_t shards_bounded,
                                 CoordinatorMetrics* metrics) {
  if (!config.aggregation.robust) return nullptr;
  const RobustCounts c = ApplyRobustBounds(config.robust, aggregators);
  metrics->CountRobust("refused_norm", c.refused_norm);
  metrics->CountRobust("clipped_norm", c.clipped_norm);
  metrics->CountRobust("trimmed_values", c.trimmed_values);
  return {{"refused_norm", c.refused_norm},
          {"clipped_norm", c.clipped_norm},
          {"trimmed_values", c.trimmed_values},
          {"median_norm", c.median_norm},
          {"max_norm", c.max_norm},
          {"shards_bounded", shards_bounded}};
}

double MaxAbsWeight(const std::vector<float>& w) {
  float m = 0;
  for (float v : w) m = std::max(m, std::fabs(v));
  return m;
}

}  // namespace shefl
