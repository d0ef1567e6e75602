// The CUDA top-k for a tensor: the sample-threshold kernels of
// cuda/topk_threshold_kernels.h driven on the tensor's current stream,
// with workspace from LibTorch's caching allocator. Built only with a
// CUDA LibTorch (SHEFL_WITH_CUDA); TopK (common/learn/compress.h) dispatches
// CUDA tensors here.
#ifndef SHEFL_CUDA_TOPK_CUDA_H_
#define SHEFL_CUDA_TOPK_CUDA_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>

#include "common/sparse/sparse_delta.h"

namespace shefl {

// Sets *out to the k entries of largest magnitude of x (a contiguous 1-D
// fp32 CUDA tensor of fewer than 2^32 entries, 0 < k < numel), indices
// ascending and ties to the lower index, exactly as ThresholdTopK
// (common/sparse/topk_threshold.h) and TopK. Returns false, leaving *out alone,
// when x holds a NaN or an infinity. CUDA errors throw c10::Error.
bool ThresholdTopKCuda(const at::Tensor& x, uint64_t k, SparseDelta* out);

// The same selection left on the device: an int32 tensor of 2 k words, the
// k indices ascending then the bits of their values; nullopt when x holds
// a NaN or an infinity. ThresholdTopKCuda is this plus the trip to the
// host; topk_gpu_bench times the two apart.
std::optional<at::Tensor> ThresholdTopKCudaPacked(const at::Tensor& x,
                                                  uint64_t k);

}  // namespace shefl

#endif  // SHEFL_CUDA_TOPK_CUDA_H_
