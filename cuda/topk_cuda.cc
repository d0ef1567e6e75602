#include "cuda/topk_cuda.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common/sparse/topk_threshold.h"
#include "cuda/topk_threshold_kernels.h"

namespace shefl {
namespace {

// Workspace bytes on x's device from the caching allocator (stream-ordered
// on the current stream, so reuse after this call is safe).
at::Tensor Bytes(const at::Tensor& like, uint64_t n) {
  return at::empty({static_cast<int64_t>(n)}, like.options().dtype(at::kByte));
}

template <typename T>
T* Ptr(const at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

// The sample, sorted descending, on the device: 2 s words, the second half
// sorted.
at::Tensor SortedSample(const at::Tensor& x, uint64_t d, uint32_t s,
                        cudaStream_t stream) {
  at::Tensor words = Bytes(x, 2ull * s * sizeof(uint32_t));
  uint32_t* sample = Ptr<uint32_t>(words);
  const size_t temp_bytes = cuda::SortSampleTempBytes(s);
  at::Tensor temp = Bytes(x, temp_bytes);
  C10_CUDA_CHECK(cuda::LaunchGatherSample(x.data_ptr<float>(), d, s, sample,
                                          stream));
  C10_CUDA_CHECK(cuda::LaunchSortSampleDescending(
      temp.data_ptr(), temp_bytes, sample, sample + s, s, stream));
  return words;
}

struct Candidates {
  at::Tensor keys;  // `count` uint64 keys
  uint64_t count = 0;
  bool finite = true;
};

// Steps 2-4: thresholds deeper in the sample until at least k entries pass;
// an overflow of the buffer reruns the same threshold with room for all.
// One device-to-host read of the counters per compaction.
Candidates Compact(const at::Tensor& x, uint64_t d, uint64_t k, uint32_t s,
                   const uint32_t* sorted, cudaStream_t stream) {
  at::Tensor counters = Bytes(x, cuda::kNumCounters * sizeof(uint64_t));
  Candidates c;
  for (int attempt = 0;; ++attempt) {
    const uint64_t rank = ThresholdRank(k, d, s, attempt);
    uint64_t capacity = ThresholdCapacity(d, s, rank);
    for (int pass = 0; pass < 2; ++pass) {
      c.keys = Bytes(x, std::max<uint64_t>(capacity, 1) * sizeof(uint64_t));
      C10_CUDA_CHECK(cuda::LaunchCompactCandidates(
          x.data_ptr<float>(), d, sorted, s, rank, Ptr<uint64_t>(c.keys),
          capacity, Ptr<unsigned long long>(counters), stream));
      const at::Tensor host = counters.to(at::kCPU);  // synchronises
      uint64_t seen[cuda::kNumCounters];
      std::memcpy(seen, host.data_ptr(), sizeof(seen));
      c.count = seen[cuda::kCandidates];
      c.finite = seen[cuda::kNonFinite] == 0;
      if (!c.finite || c.count <= capacity) break;
      capacity = c.count;  // the same t again, with room
    }
    if (!c.finite || c.count >= k) return c;  // always at t = 0
  }
}

}  // namespace

std::optional<at::Tensor> ThresholdTopKCudaPacked(const at::Tensor& x,
                                                  uint64_t k) {
  const c10::cuda::CUDAGuard guard(x.device());
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  const uint64_t d = static_cast<uint64_t>(x.numel());
  const uint32_t s = static_cast<uint32_t>(ThresholdSampleSize(d));
  const at::Tensor sample = SortedSample(x, d, s, stream);
  const Candidates c =
      Compact(x, d, k, s, Ptr<uint32_t>(sample) + s, stream);
  if (!c.finite) return std::nullopt;

  const size_t temp_bytes = cuda::SelectTempBytes(c.count, k, d);
  at::Tensor temp = Bytes(x, temp_bytes);
  at::Tensor keys_sorted = Bytes(x, c.count * sizeof(uint64_t));
  at::Tensor idx_scratch = Bytes(x, k * sizeof(uint32_t));
  // Indices then values, 2 k words: one buffer for the trip to the host.
  at::Tensor packed =
      at::empty({2 * static_cast<int64_t>(k)}, x.options().dtype(at::kInt));
  C10_CUDA_CHECK(cuda::LaunchSelectTopK(
      temp.data_ptr(), temp_bytes, Ptr<uint64_t>(c.keys),
      Ptr<uint64_t>(keys_sorted), c.count, k, d, Ptr<uint32_t>(idx_scratch),
      Ptr<uint32_t>(packed), stream));
  C10_CUDA_CHECK(
      cuda::LaunchPackValues(x.data_ptr<float>(), k, Ptr<uint32_t>(packed),
                             stream));
  return packed;
}

bool ThresholdTopKCuda(const at::Tensor& x, uint64_t k, SparseDelta* result) {
  const std::optional<at::Tensor> packed = ThresholdTopKCudaPacked(x, k);
  if (!packed) return false;
  // Through pinned memory (LibTorch's caching host allocator keeps it): a
  // pageable copy is staged by the driver and took most of the call at
  // k = 1.1M on an H200.
  at::Tensor host = at::empty(
      {packed->numel()}, at::TensorOptions().dtype(at::kInt).pinned_memory(true));
  host.copy_(*packed);  // synchronises
  SparseDelta out;
  out.dim = static_cast<uint64_t>(x.numel());
  out.indices.resize(k);
  out.values.resize(k);
  std::memcpy(out.indices.data(), host.data_ptr(), k * sizeof(uint32_t));
  std::memcpy(out.values.data(),
              static_cast<const char*>(host.data_ptr()) + k * sizeof(uint32_t),
              k * sizeof(float));
  *result = std::move(out);
  return true;
}

}  // namespace shefl
