#include "common/secure/honest_range.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace shefl {

uint64_t ClientWordBound(double weight, double clip, int scale_bits) {
  // AddClientInput weights in double and stores a float (which may round
  // up past weight * c); EncodeFixedPoint clips that to c and scales by a
  // power of two (exact), then rounds up or down.
  const double weighted = static_cast<float>(weight * clip);
  return static_cast<uint64_t>(
      std::ceil(std::ldexp(std::min(weighted, clip), scale_bits)));
}

std::optional<size_t> FirstDishonestWord(absl::Span<const uint32_t> sum,
                                         uint64_t bound) {
  for (size_t j = 0; j < sum.size(); ++j) {
    const int64_t v = static_cast<int32_t>(sum[j]);
    if (static_cast<uint64_t>(std::llabs(v)) > bound) return j;
  }
  return std::nullopt;
}

std::optional<size_t> FirstDishonestCount(absl::Span<const uint32_t> counts,
                                          uint64_t bound) {
  for (size_t j = 0; j < counts.size(); ++j)
    if (counts[j] > bound) return j;
  return std::nullopt;
}

uint64_t NoisyWordBound(uint64_t bound, double noise_variance) {
  if (!(noise_variance > 0)) return bound;
  return bound + static_cast<uint64_t>(
                     std::ceil(kNoiseTailSigmas * std::sqrt(noise_variance)));
}

std::optional<double> DishonestNorm(absl::Span<const uint32_t> values,
                                    double honest_l2, double noise_variance) {
  double squares = 0;
  for (uint32_t w : values) {
    const double v = static_cast<int32_t>(w);
    squares += v * v;
  }
  const double k = static_cast<double>(values.size());
  const double noise =
      std::sqrt(std::max(noise_variance, 0.0) * (k + 2 * std::sqrt(40 * k) + 80));
  const double norm = std::sqrt(squares);
  if (norm > honest_l2 + noise) return norm;
  return std::nullopt;
}

}  // namespace shefl
