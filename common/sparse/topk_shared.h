// What the CPU top-k selectors (radix_topk, topk_threshold) share: the
// order-preserving magnitude bits of a float, the finiteness test built on
// them, and the k = 0 / k = d case where there is nothing to select.
#ifndef SHEFL_COMMON_SPARSE_TOPK_SHARED_H_
#define SHEFL_COMMON_SPARSE_TOPK_SHARED_H_

#include <cstdint>

#include "common/sparse/half.h"
#include "common/sparse/sparse_delta.h"

namespace shefl {

// |v|'s bits: for finite floats they order like the magnitudes.
inline uint32_t MagnitudeBits(float v) { return FloatBits(v) & 0x7fffffffu; }

// Magnitude bits plus 2^23 reach bit 31 exactly for Inf and NaN, so one OR
// over a pass says whether any entry was not finite.
constexpr uint32_t kNonFiniteCarry = 0x00800000u;
constexpr uint32_t kCarryBit = 0x80000000u;

inline bool AllFinite(const float* x, uint64_t d) {
  uint32_t acc = 0;
  for (uint64_t i = 0; i < d; ++i) acc |= MagnitudeBits(x[i]) + kNonFiniteCarry;
  return (acc & kCarryBit) == 0;
}

// k = 0 or k >= d: no selection (dense baselines send k = d). Sets *out to
// nothing or to every entry in order; false, *out untouched, where x holds
// a NaN or an infinity.
bool TrivialTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* out);

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_TOPK_SHARED_H_
