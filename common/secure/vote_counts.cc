#include "common/secure/vote_counts.h"

#include <algorithm>
#include <cmath>

namespace shefl {
namespace {

// |v|, with NaN below every number so that it is never picked first.
float Magnitude(float v) { return std::isnan(v) ? -1.0f : std::fabs(v); }

}  // namespace

std::vector<uint64_t> OwnTopK(absl::Span<const float> x, uint64_t k) {
  const uint64_t d = x.size();
  k = std::min(k, d);
  std::vector<uint64_t> out;
  if (k == 0) return out;
  SecretVector<float> mags(d);
  for (uint64_t i = 0; i < d; ++i) mags[i] = Magnitude(x[i]);
  // The k-th largest magnitude: every entry above it is in, and as many
  // entries equal to it as are needed, lowest coordinates first.
  SecretVector<float> sorted = mags.Clone();
  float* first = sorted.data();
  std::nth_element(first, first + (k - 1), first + d,
                   [](float a, float b) { return a > b; });
  const float threshold = sorted[k - 1];
  uint64_t above = 0;
  for (uint64_t i = 0; i < d; ++i) above += mags[i] > threshold ? 1 : 0;
  uint64_t ties = k - above;
  out.reserve(k);
  for (uint64_t i = 0; i < d; ++i) {
    if (mags[i] > threshold) {
      out.push_back(i);
    } else if (mags[i] == threshold && ties > 0) {
      out.push_back(i);
      --ties;
    }
  }
  return out;
}

void AddVoteCounts(absl::Span<const uint64_t> positions,
                   const std::vector<TensorGrid>& grids, size_t base,
                   SecretWords* words) {
  for (uint64_t p : positions) {
    size_t at = base;
    for (const TensorGrid& g : grids) {
      if (p >= g.offset && p < g.offset + g.numel()) {
        const uint64_t o = (p - g.offset) / g.cols, i = (p - g.offset) % g.cols;
        (*words)[at + o] += 1;
        (*words)[at + g.rows + i] += 1;
        break;
      }
      at += g.rows + g.cols;
    }
  }
}

}  // namespace shefl
