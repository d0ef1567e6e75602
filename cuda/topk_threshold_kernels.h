// Host launchers of the CUDA sample-threshold top-k, on raw device pointers
// and a stream: the steps of common/sparse/topk_threshold.h (the CPU reference,
// whose plan helpers pick the sample, ranks and capacities here too).
// Torch-free, so nvcc needs only CUDA's headers; cuda/topk_cuda.cc drives
// them for an at::Tensor. Every launcher only enqueues work on `stream`
// and returns the launch's error; none synchronises.
#ifndef SHEFL_CUDA_TOPK_THRESHOLD_KERNELS_H_
#define SHEFL_CUDA_TOPK_THRESHOLD_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace shefl {
namespace cuda {

// counters[kCandidates]: candidates the compaction saw (also past its
// capacity); counters[kNonFinite]: nonzero when some entry is NaN or Inf.
enum Counter { kCandidates = 0, kNonFinite = 1, kNumCounters = 2 };

// Step 1: sample[j] = magnitude bits of x[ThresholdSamplePosition(j, s, d)]
// for j < s (s <= d).
cudaError_t LaunchGatherSample(const float* x, uint64_t d, uint32_t s,
                               uint32_t* sample, cudaStream_t stream);

// Step 1, sorted: `sorted` = `sample` descending. temp_bytes from
// SortSampleTempBytes(s).
size_t SortSampleTempBytes(uint32_t s);
cudaError_t LaunchSortSampleDescending(void* temp, size_t temp_bytes,
                                       const uint32_t* sample,
                                       uint32_t* sorted, uint32_t s,
                                       cudaStream_t stream);

// Steps 2-3, one pass over x: t = sorted[rank] (0 when rank >= s, at most
// the bits of Inf), and keys[0..capacity) receives, in no particular
// order, ThresholdKey(|x[i]| bits, i, ThresholdIndexBits(d)) of the
// entries with |x[i]| bits >= t. Zeroes `counters` (kNumCounters uint64)
// first, then counts every candidate and flags NaN/Inf anywhere in x.
cudaError_t LaunchCompactCandidates(const float* x, uint64_t d,
                                    const uint32_t* sorted, uint32_t s,
                                    uint64_t rank, uint64_t* keys,
                                    uint64_t capacity,
                                    unsigned long long* counters,
                                    cudaStream_t stream);

// Step 5: of the c candidate keys (1 <= k <= c), the k largest; their
// indices, ascending, land in packed[0..k) (uint32). keys_sorted has room
// for c keys, idx_scratch for k indices; temp_bytes from SelectTempBytes.
size_t SelectTempBytes(uint64_t c, uint64_t k, uint64_t d);
cudaError_t LaunchSelectTopK(void* temp, size_t temp_bytes,
                             const uint64_t* keys, uint64_t* keys_sorted,
                             uint64_t c, uint64_t k, uint64_t d,
                             uint32_t* idx_scratch, uint32_t* packed,
                             cudaStream_t stream);

// Step 5, the pack: packed[k + j] = the float bits of x[packed[j]], j < k,
// so one buffer of 2k words holds the indices and then the values.
cudaError_t LaunchPackValues(const float* x, uint64_t k, uint32_t* packed,
                             cudaStream_t stream);

}  // namespace cuda
}  // namespace shefl

#endif  // SHEFL_CUDA_TOPK_THRESHOLD_KERNELS_H_
