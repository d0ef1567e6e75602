#include "common/core/backoff.h"

#include <algorithm>

namespace shefl {

Backoff::Backoff(double initial_s, double max_s, uint64_t seed)
    : initial_(initial_s), max_(std::max(initial_s, max_s)), base_(initial_s),
      rng_(seed) {}

double Backoff::NextDelay() {
  // 53 random bits to a double in [0, 1): the same on every platform,
  // unlike std::uniform_real_distribution.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const double delay = base_ * (0.5 + u);
  base_ = std::min(base_ * 2, max_);
  return delay;
}

}  // namespace shefl
