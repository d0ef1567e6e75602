// Exact top-k by magnitude of a float array on the CPU. Torch-free.
//
// For finite floats the bit pattern of |x| (sign bit cleared) orders like
// |x| itself, so comparing bits is comparing magnitudes; +0 and -0 are
// equal, subnormals order below every normal. Ties at the k-th magnitude go
// to the lower indices, as in TopK (common/learn/compress.h).
//
// RadixTopK reads the data once: the magnitude bits of a fixed
// pseudo-random sample bracket the k-th largest magnitude between `lo` and
// `hi` with a wide margin; one branch-free pass keeps every entry whose
// magnitude is >= lo (index and value, in index order: about k plus a few
// per cent); an exact selection among the kept entries at or below `hi`
// then fixes the threshold and the ties, and a pass over the kept list (not
// over the data) compacts it to the k winners. The result does not depend
// on the sample: should the bracket miss (fewer than k entries >= lo, or
// more than k above hi), it falls back to RadixTopKTwoPass. k >= d and
// k = 0 take a single finiteness scan. On x86-64 CPUs with AVX2 (checked
// at run time; the build targets plain x86-64) the pass over the data packs
// 8 entries a step; elsewhere a branch-free scalar loop does the same.
#ifndef SHEFL_COMMON_SPARSE_RADIX_TOPK_H_
#define SHEFL_COMMON_SPARSE_RADIX_TOPK_H_

#include <cstdint>

#include "common/sparse/sparse_delta.h"

namespace shefl {

// Sets *out to the k entries of largest |x[i]| of x[0..d), indices
// ascending, values copied; k is clamped to d. Expects d < 2^32. Returns
// false, leaving *out alone, when x holds a NaN or an infinity.
bool RadixTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* out);

// The same result by a two-pass radix select: a histogram of the high 16
// bits of |x| finds the bucket of the k-th magnitude, a second pass
// collects the indices above it and the candidates inside it. RadixTopK's
// fallback and small-d path, and the reference its tests compare with.
bool RadixTopKTwoPass(const float* x, uint64_t d, uint64_t k,
                      SparseDelta* out);

// Whether RadixTopK may use the AVX2 pass where the CPU has it (default
// true); tests turn it off to check the scalar pass gives the same result.
void SetRadixTopKSimd(bool allowed);

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_RADIX_TOPK_H_
