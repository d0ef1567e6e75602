// Exact top-k by magnitude of a float array on the CPU, by a radix select
// over the floats' bit patterns: one pass builds a histogram of the high 16
// bits of |x|, which finds the bucket holding the k-th largest magnitude;
// a second pass collects the indices above that bucket and the candidates
// inside it; an exact selection over the few candidates settles the rest.
// Two reads of the data, no sort of it. Torch-free.
//
// For finite floats the bit pattern of |x| (sign bit cleared) orders like
// |x| itself, so comparing bits is comparing magnitudes; +0 and -0 are
// equal. Ties at the k-th magnitude go to the lower indices, as in TopK
// (common/compress.h).
#ifndef SHEFL_COMMON_RADIX_TOPK_H_
#define SHEFL_COMMON_RADIX_TOPK_H_

#include <cstdint>

#include "common/sparse_delta.h"

namespace shefl {

// Sets *out to the k entries of largest |x[i]| of x[0..d), indices
// ascending, values copied; k is clamped to d. Expects d < 2^32. Returns
// false, leaving *out alone, when x holds a NaN or an infinity (found by
// the first pass at no extra cost).
bool RadixTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* out);

}  // namespace shefl

#endif  // SHEFL_COMMON_RADIX_TOPK_H_
