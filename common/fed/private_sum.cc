#include "common/fed/private_sum.h"

#include <algorithm>
#include <cmath>

namespace shefl {

std::map<int64_t, JointClip> ClipJointly(
    const std::vector<ModelAggregator>& aggregators, double clip) {
  std::map<int64_t, JointClip> out;
  for (const ModelAggregator& agg : aggregators)
    for (const ReceivedUpdate& u : agg.updates()) {
      double sq = 0;
      for (float v : u.delta.values) sq += static_cast<double>(v) * v;
      out[u.client_id].norm += sq;  // squared until the end
    }
  for (auto& [client, c] : out) {
    c.norm = std::sqrt(c.norm);
    c.factor = c.norm > clip ? clip / c.norm : 1.0;
  }
  return out;
}

std::array<double, 2> PlannedCoefficients(const AggregationConfig& agg,
                                          int64_t planned_hpc,
                                          int64_t planned_lpc) {
  const auto h = static_cast<double>(planned_hpc);
  const auto l = static_cast<double>(planned_lpc);
  if (agg.rule == "uniform") {
    const double c = h + l > 0 ? 1 / (h + l) : 0;
    return {c, c};
  }
  double beta = agg.hpc_share;
  if (planned_lpc == 0) beta = 1;
  if (planned_hpc == 0) beta = 0;
  return {h > 0 ? beta / h : 0, l > 0 ? (1 - beta) / l : 0};
}

double MaxCoefficient(const std::array<double, 2>& coef, int64_t planned_hpc,
                      int64_t planned_lpc) {
  return std::max(planned_hpc > 0 ? coef[0] : 0.0,
                  planned_lpc > 0 ? coef[1] : 0.0);
}

std::vector<double> ClippedSum(const std::vector<ReceivedUpdate>& updates,
                               const std::array<double, 2>& coef,
                               const std::map<int64_t, JointClip>& clips,
                               uint64_t dim) {
  std::vector<const ReceivedUpdate*> order;
  for (const ReceivedUpdate& u : updates) order.push_back(&u);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->client_id < b->client_id;
  });
  std::vector<double> sum(dim, 0.0);
  for (const ReceivedUpdate* u : order) {
    const auto it = clips.find(u->client_id);
    const double f = it == clips.end() ? 1.0 : it->second.factor;
    const double c = coef[u->tier == Tier::kHpc ? 0 : 1] * f;
    const SparseDelta& d = u->delta;
    for (size_t i = 0; i < d.indices.size(); ++i)
      sum[d.indices[i]] += c * d.values[i];
  }
  return sum;
}

}  // namespace shefl
