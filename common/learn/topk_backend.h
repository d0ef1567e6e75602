// The device top-k backend: the one place where learn/ chooses the CUDA
// kernels of cuda/ (built only with a CUDA LibTorch) for tensors on a GPU.
// Stateless and thread-safe.
#ifndef SHEFL_COMMON_LEARN_TOPK_BACKEND_H_
#define SHEFL_COMMON_LEARN_TOPK_BACKEND_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "common/sparse/sparse_delta.h"

namespace shefl {

// Sets *out to the k largest-magnitude entries of x (contiguous 1-D fp32 on
// a CUDA device, 0 < k < numel < 2^32), ties to the lower index, when this
// build has the CUDA backend. Returns false, leaving *out alone, when it
// has none, when x is not on a CUDA device, or when x holds NaN or Inf
// (TopK then takes the tensor-ops path, which names the bad index).
bool DeviceTopK(const at::Tensor& x, uint64_t k, SparseDelta* out);

// True when this build carries the CUDA top-k kernels.
bool HasCudaTopKBackend();

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_TOPK_BACKEND_H_
