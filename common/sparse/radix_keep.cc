// The keep pass of the radix top-k (radix_topk.cc): the one pass over
// the data that lists every entry at or above a magnitude, in plain C++
// and, chosen at run time where the CPU has it, with AVX2.
#include "common/sparse/radix_keep.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "common/sparse/topk_shared.h"

namespace shefl {
namespace radix_internal {

// The single pass over the data, branch-free: every entry is written at
// the end of the list, and the end advances only when |x| >= lo. Returns
// the new end; idx and val have room for end - start more entries.
uint64_t KeepBlock(const float* x, uint64_t start, uint64_t end, uint32_t lo,
                   uint32_t* idx, float* val, uint64_t n) {
  for (uint64_t i = start; i < end; ++i) {
    const float v = x[i];
    idx[n] = static_cast<uint32_t>(i);
    val[n] = v;
    n += MagnitudeBits(v) >= lo;
  }
  return n;
}

#if defined(__x86_64__) && defined(__GNUC__)
namespace {

// The same with AVX2, chosen at run time where the CPU has it: 8 entries
// a step, the kept lanes packed to the front by a permutation from a table
// indexed by the comparison mask, then stored whole (the room covers it).
struct CompressTable {
  uint32_t perm[256][8];
};

constexpr CompressTable MakeCompressTable() {
  CompressTable t{};
  for (int m = 0; m < 256; ++m) {
    int j = 0;
    for (int lane = 0; lane < 8; ++lane)
      if (m & (1 << lane)) t.perm[m][j++] = lane;
    while (j < 8) t.perm[m][j++] = 0;
  }
  return t;
}

constexpr CompressTable kCompress = MakeCompressTable();

}  // namespace

__attribute__((target("avx2,popcnt"))) uint64_t KeepBlockAvx2(
    const float* x, uint64_t start, uint64_t end, uint32_t lo, uint32_t* idx,
    float* val, uint64_t n) {
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  // b >= lo as a signed b > lo - 1: both are below 2^31, and lo = 0 gives
  // -1, below every b.
  const __m256i below = _mm256_set1_epi32(static_cast<int32_t>(lo) - 1);
  __m256i lanes = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int32_t>(start)),
                                   _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i step = _mm256_set1_epi32(8);
  uint64_t i = start;
  for (; i + 8 <= end; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256i b = _mm256_and_si256(_mm256_castps_si256(v), magnitude);
    const int m = _mm256_movemask_ps(
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(b, below)));
    const __m256i perm = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(kCompress.perm[m]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(idx + n),
                        _mm256_permutevar8x32_epi32(lanes, perm));
    _mm256_storeu_ps(val + n, _mm256_permutevar8x32_ps(v, perm));
    n += static_cast<uint64_t>(__builtin_popcount(m));
    lanes = _mm256_add_epi32(lanes, step);
  }
  return KeepBlock(x, i, end, lo, idx, val, n);
}

bool HaveAvx2() {
  static const bool have =
      __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
  return have;
}
#else
bool HaveAvx2() { return false; }
uint64_t KeepBlockAvx2(const float* x, uint64_t start, uint64_t end,
                       uint32_t lo, uint32_t* idx, float* val, uint64_t n) {
  return KeepBlock(x, start, end, lo, idx, val, n);
}
#endif

}  // namespace radix_internal
}  // namespace shefl
