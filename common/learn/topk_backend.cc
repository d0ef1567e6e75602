#include "common/learn/topk_backend.h"

#include <limits>

#ifdef SHEFL_WITH_CUDA  // set on this file alone (common/learn/CMakeLists.txt)
#include "cuda/topk_cuda.h"
#endif

namespace shefl {

bool HasCudaTopKBackend() {
#ifdef SHEFL_WITH_CUDA
  return true;
#else
  return false;
#endif
}

bool DeviceTopK(const at::Tensor& x, uint64_t k, SparseDelta* out) {
#ifdef SHEFL_WITH_CUDA
  const uint64_t d = static_cast<uint64_t>(x.numel());
  if (!x.device().is_cuda() || k == 0 || k >= d ||
      d > std::numeric_limits<uint32_t>::max())
    return false;
  return ThresholdTopKCuda(x, k, out);
#else
  (void)x, (void)k, (void)out;
  return false;
#endif
}

}  // namespace shefl
