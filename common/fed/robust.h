// Defences against a participant that sends a harmful update
// (aggregation.robust; the bounds are RobustConfig in common/core/config.h).
//
// Three bounds, each off when its setting is 0:
//  - magnitude: an update with a coordinate above max_abs in magnitude is
//    refused at its upload (CheckMagnitude; the round state calls it), so
//    the sender is told and its residual rolls back;
//  - norm: once the round is closed, every update's L2 norm is compared
//    with the median norm of all the round's updates (every member's, so
//    one sender among a member's two or three cannot move the reference).
//    Above refuse_multiple x median it is left out of the aggregate;
//    above clip_multiple x median, or above norm_bound, it is scaled down
//    to the bound;
//  - trim: at each coordinate a member's n senders sent, the floor(trim x n)
//    lowest and highest values (absent senders count as 0) bound the
//    others: a coordinate-wise winsorised mean, which keeps every method's
//    weights and coefficients (trim 0.5 gives the coordinate-wise median).
//    A coordinate a sender did not send stays 0.
// Everything here depends on the set of updates, never on their order, so
// aggregation stays bit-identical however the uploads arrived.
// Free functions over caller-owned data; thread-compatible.
#ifndef SHEFL_COMMON_FED_ROBUST_H_
#define SHEFL_COMMON_FED_ROBUST_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/core/config.h"
#include "common/fed/aggregate.h"
#include "common/sparse/sparse_delta.h"

namespace shefl {

// What ApplyRobustBounds did to a round (rounds.jsonl `robust`).
struct RobustCounts {
  int64_t refused_norm = 0;    // updates left out (norm)
  int64_t clipped_norm = 0;    // updates scaled down to the bound
  int64_t trimmed_values = 0;  // coordinate values moved by trimming
  double median_norm = 0;      // of the round's updates, before any bound
  double max_norm = 0;         // the largest norm sent
};

// INVALID_ARGUMENT naming the first coordinate above `max_abs` (or not
// finite); OK when max_abs is 0 and every value is finite.
absl::Status CheckMagnitude(const SparseDelta& delta, double max_abs);

// The L2 norm of a sparse delta (a double sum in index order).
double L2Norm(const SparseDelta& delta);

// The median of `v` (the mean of the middle two for an even count; 0 for
// none).
double Median(std::vector<double> v);

// Applies the norm bounds and trimming of `cfg` to every member's buffered
// updates of a closed round. Refused updates are removed, so the rules'
// counts (paper, paper_per_model) see only what is folded in.
RobustCounts ApplyRobustBounds(const RobustConfig& cfg,
                               std::vector<ModelAggregator>* aggregators);

// Winsorises one member's updates in place (the `trim` bound alone);
// returns how many values moved.
int64_t TrimCoordinates(double trim, std::vector<ReceivedUpdate>* updates);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_ROBUST_H_
