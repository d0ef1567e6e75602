// Exact top-k by magnitude through a threshold estimated from a sample: the
// algorithm of the CUDA top-k (cuda/topk_threshold.cu), here on the CPU as
// its reference and tested against the exact TopK (common/learn/compress.h).
// Torch-free, and the plan helpers below are inline so that the CUDA
// sources use the very same sample, ranks and capacities.
//
// The steps, the same on both devices:
//  1. Sample: the magnitude bits of s entries at fixed, evenly spread
//     positions (ThresholdSamplePosition), sorted descending.
//  2. Threshold: t = the sample's entry of rank r (ThresholdRank), chosen so
//     that c = #{|x| >= t} exceeds k with a margin of 4 standard deviations
//     of the sample count (t = 0, every entry a candidate, when the rank
//     falls off the sample).
//  3. One pass over the data compacts the candidates |x| >= t into 64-bit
//     keys (magnitude bits << b | ~index: descending keys order by
//     magnitude descending, then index ascending, the tie rule) and checks
//     that every entry is finite. The buffer holds ThresholdCapacity keys;
//     the count goes on past it, and an overflow reruns the pass with room
//     for the count.
//  4. c < k (the sample put t too high): the next attempt takes a lower
//     rank, ending at t = 0. The result never depends on the sample; only
//     the time does.
//  5. The k largest keys among the c candidates, their indices sorted
//     ascending, then the values gathered (the pack).
//
// As in TopK: among equal magnitudes the lower index wins, indices come out
// ascending, +0 and -0 are equal, and NaN/Inf are refused.
// Thread-compatible: ThresholdTopKStats is a plain value.
#ifndef SHEFL_COMMON_SPARSE_TOPK_THRESHOLD_H_
#define SHEFL_COMMON_SPARSE_TOPK_THRESHOLD_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "common/sparse/sparse_delta.h"

// The helpers the CUDA kernels call too.
#if defined(__CUDACC__)
#define SHEFL_HOST_DEVICE __host__ __device__
#else
#define SHEFL_HOST_DEVICE
#endif

namespace shefl {

// How many entries the sample holds: all of a small vector, else d / 128
// within [4096, 65536] (a rank's relative error shrinks as 1/sqrt(s), and
// so does the candidates' excess over k).
inline uint64_t ThresholdSampleSize(uint64_t d) {
  if (d <= 4096) return d;
  return std::clamp<uint64_t>(d / 128, 4096, 65536);
}

// The j-th sample position (0 <= j < s <= d): the middle of the j-th of s
// equal strides. Deterministic, so a run is reproducible to the timing.
SHEFL_HOST_DEVICE inline uint64_t ThresholdSamplePosition(uint64_t j, uint64_t s, uint64_t d) {
  return (2 * j + 1) * d / (2 * s);  // < 2^49 for s <= 2^16, d < 2^32
}

// Rank (0 = largest) in the sorted sample of the threshold for `attempt`
// (0 first). Attempt 0: the expected rank of the k-th magnitude plus 4
// standard deviations plus 2; each later attempt goes 4 times as deep. A
// rank >= s means t = 0: every entry is a candidate, which always holds k.
inline uint64_t ThresholdRank(uint64_t k, uint64_t d, uint64_t s,
                              int attempt) {
  if (s == 0 || d == 0) return 0;
  if (s == d) return attempt == 0 && k > 0 ? k - 1 : s;  // exact: c >= k
  const double q = static_cast<double>(k) / static_cast<double>(d);
  const double mean = q * static_cast<double>(s);
  double r = std::ceil(mean + 4.0 * std::sqrt(mean * (1.0 - q)) + 2.0);
  for (int a = 0; a < attempt && r < static_cast<double>(s); ++a) r *= 4;
  return r >= static_cast<double>(s) ? s : static_cast<uint64_t>(r);
}

// Room for candidates of the first compaction at threshold rank r:
// the expected count plus a quarter plus 4096, at most d.
inline uint64_t ThresholdCapacity(uint64_t d, uint64_t s, uint64_t rank) {
  if (rank >= s || s == 0) return d;
  const double expected = (static_cast<double>(rank) + 1.0) /
                          static_cast<double>(s) * static_cast<double>(d);
  const double cap = expected * 1.25 + 4096.0;
  return cap >= static_cast<double>(d) ? d : static_cast<uint64_t>(cap);
}

// Bits of the index part of a candidate key: enough for indices < d.
inline int ThresholdIndexBits(uint64_t d) {
  int b = 1;
  while (b < 32 && (uint64_t{1} << b) < d) ++b;
  return b;
}

// The candidate key of an entry (magnitude bits < 2^31, index < 2^b, b =
// ThresholdIndexBits(d)): the magnitude bits above the index's complement,
// 31 + b bits in all, so that a radix sort of the keys needs no more.
SHEFL_HOST_DEVICE inline uint64_t ThresholdKey(uint32_t magnitude_bits,
                                               uint32_t index, int b) {
  const uint64_t mask = (uint64_t{1} << b) - 1;
  return (static_cast<uint64_t>(magnitude_bits) << b) | (mask - index);
}
SHEFL_HOST_DEVICE inline uint32_t ThresholdKeyIndex(uint64_t key, int b) {
  const uint64_t mask = (uint64_t{1} << b) - 1;
  return static_cast<uint32_t>(mask - (key & mask));
}

// What a run did, for tests and benchmarks.
struct ThresholdTopKStats {
  uint64_t sample = 0;      // s
  uint64_t candidates = 0;  // c of the final attempt
  int attempts = 0;         // threshold attempts (1: the sample was right)
  int overflows = 0;        // compactions rerun for want of room
};

// Sets *out to the k entries of largest |x[i]| of x[0..d), indices
// ascending, values copied; k is clamped to d. Expects d < 2^32. Returns
// false, leaving *out alone, when x holds a NaN or an infinity.
bool ThresholdTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* out,
                   ThresholdTopKStats* stats = nullptr);

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_TOPK_THRESHOLD_H_
