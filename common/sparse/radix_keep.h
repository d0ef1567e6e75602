// The keep pass of the radix top-k (radix_topk.cc), apart from the select
// so that its AVX2 kernel stands alone. Internal to common/sparse. Pure
// functions; thread-safe.
#ifndef SHEFL_COMMON_SPARSE_RADIX_KEEP_H_
#define SHEFL_COMMON_SPARSE_RADIX_KEEP_H_

#include <cstdint>

namespace shefl {
namespace radix_internal {

// Appends, after the first n entries of idx/val, every i in [start, end)
// with magnitude bits of x[i] >= lo (branch-free: each entry is written and
// the end advances only when it is kept); returns the new end. idx and val
// need room for end - start more entries (8 more for the AVX2 form).
uint64_t KeepBlock(const float* x, uint64_t start, uint64_t end, uint32_t lo,
                   uint32_t* idx, float* val, uint64_t n);
// The same, 8 entries a step with AVX2; the plain form where the build or
// the CPU has no AVX2 (call it only when HaveAvx2()).
uint64_t KeepBlockAvx2(const float* x, uint64_t start, uint64_t end,
                       uint32_t lo, uint32_t* idx, float* val, uint64_t n);
// True when this CPU runs AVX2 and POPCNT.
bool HaveAvx2();

}  // namespace radix_internal
}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_RADIX_KEEP_H_
