#include "common/learn_stacked/cohort_lanes.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/core/rng.h"

namespace shefl {
namespace cohort_internal {

// LocalTrain's loop, one batch at a time: by steps it stops mid-pass once
// p.steps are taken; by epochs it runs p.epochs whole passes.
std::optional<train_internal::BatchRange> Lane::Next() {
  const bool by_steps = p.steps > 0;
  if (by_steps && steps >= p.steps) return std::nullopt;
  if (pass < 0 || next == batches.size()) {
    if (batches.empty()) return std::nullopt;
    if (!by_steps && pass + 1 >= p.epochs) return std::nullopt;
    ++pass;
    Shuffle(ids, rng);
    next = 0;
    pass_samples.push_back(0);
  }
  const train_internal::BatchRange r = batches[next++];
  ++steps;
  samples += r.second - r.first;
  pass_samples.back() += r.second - r.first;
  return r;
}

int64_t Lane::MaxPasses() const {
  if (p.steps <= 0) return p.epochs;
  const int64_t per_pass = std::max<int64_t>(1, batches.size());
  return (p.steps + per_pass - 1) / per_pass;
}

int64_t Lane::FullStepsAhead(int64_t full, int64_t cap) const {
  const bool by_steps = p.steps > 0;
  int64_t left = by_steps ? p.steps - steps : cap;
  int64_t n = 0, at_pass = pass;
  size_t i = next;
  while (n < std::min(left, cap) && !batches.empty()) {
    if (i == batches.size()) {
      if (!by_steps && at_pass + 1 >= p.epochs) break;
      ++at_pass;
      i = 0;
    }
    if (batches[i].second - batches[i].first != full) break;
    ++n;
    ++i;
  }
  return n;
}

absl::StatusOr<TrainStats> LaneStats(const Lane& lane,
                                     const std::vector<double>& pass_sums,
                                     double first_loss, double seconds) {
  TrainStats stats;
  stats.steps = lane.steps;
  stats.samples = lane.samples;
  stats.seconds = seconds;
  if (lane.steps > 0) stats.first_loss = first_loss;
  double loss_sum = 0;
  for (size_t pass = 0; pass < lane.pass_samples.size(); ++pass) {
    const double s = pass_sums.at(pass);
    loss_sum += s;
    stats.last_epoch_loss = s / static_cast<double>(lane.pass_samples[pass]);
    if (!std::isfinite(s)) {
      return absl::InternalError(absl::StrCat(
          "local training diverged: loss ", stats.last_epoch_loss, " in pass ",
          pass, " (lr ", lane.p.lr, ")"));
    }
  }
  if (stats.samples > 0) stats.mean_loss = loss_sum / stats.samples;
  return stats;
}

}  // namespace cohort_internal
}  // namespace shefl
