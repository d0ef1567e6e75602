// The clipped, fixed-denominator sum of differential privacy (docs/PRIVACY.md):
// what the noise is added to. Each client's updates of a round, to every
// model it trains, are clipped together to L2 norm S; each model's sum
// weighs an update by its tier's coefficient from the round's PLANNED
// counts, never the received ones, so one client's presence changes the
// sum by at most S times that coefficient and never another's weight.
// Pure functions; thread-safe.
#ifndef SHEFL_COMMON_FED_PRIVATE_SUM_H_
#define SHEFL_COMMON_FED_PRIVATE_SUM_H_

#include <array>
#include <cstdint>
#include <map>
#include <vector>

#include "common/core/config.h"
#include "common/fed/aggregate.h"

namespace shefl {

// One client's joint norm over its updates of the round and the factor
// min(1, S / norm) its updates are scaled by.
struct JointClip {
  double norm = 0;
  double factor = 1;
};

// By client id, over the updates buffered in `aggregators` (client_order).
std::map<int64_t, JointClip> ClipJointly(
    const std::vector<ModelAggregator>& aggregators, double clip);

// The coefficients {HPC, LPC} of a model with `planned_hpc` and
// `planned_lpc` planned updates under `rule` (uniform: 1 / all planned;
// workload_aware: beta / H and (1 - beta) / L, beta = 1 when no LPC is
// planned, 0 when no HPC is), without the server learning rate.
std::array<double, 2> PlannedCoefficients(const AggregationConfig& agg,
                                          int64_t planned_hpc,
                                          int64_t planned_lpc);

// The largest coefficient a client can carry in the model: the sum's
// sensitivity over S.
double MaxCoefficient(const std::array<double, 2>& coef, int64_t planned_hpc,
                      int64_t planned_lpc);

// sum_i coef[tier of i] * factor_i * d_i over `updates`, in client-id
// order, in double, dense (size dim).
std::vector<double> ClippedSum(const std::vector<ReceivedUpdate>& updates,
                               const std::array<double, 2>& coef,
                               const std::map<int64_t, JointClip>& clips,
                               uint64_t dim);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_PRIVATE_SUM_H_
