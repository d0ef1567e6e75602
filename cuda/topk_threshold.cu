// The CUDA sample-threshold top-k: the kernels behind
// cuda/topk_threshold_kernels.h, step for step the CPU reference of
// common/sparse/topk_threshold.cc (which the parity tests hold to the exact TopK).
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>

#include <algorithm>

#include "common/sparse/topk_threshold.h"
#include "cuda/topk_threshold_kernels.h"

namespace shefl {
namespace cuda {
namespace {

constexpr uint32_t kInfBits = 0x7f800000u;

// The compaction's tile: 256 threads, each 4 float4 (16 entries).
constexpr int kThreads = 256;
constexpr int kVecs = 4;
constexpr int kPerThread = 4 * kVecs;
constexpr int kTile = kThreads * kPerThread;  // 4096 entries

__device__ __forceinline__ uint32_t MagnitudeBits(float v) {
  return __float_as_uint(v) & 0x7fffffffu;
}

__global__ void GatherSampleKernel(const float* __restrict__ x, uint64_t d,
                                   uint32_t s, uint32_t* __restrict__ sample) {
  const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j < s) sample[j] = MagnitudeBits(x[ThresholdSamplePosition(j, s, d)]);
}

// Entries tile*kTile + (v*kThreads + threadIdx.x)*4 + e, v < kVecs, e < 4:
// each float4 load of a warp reads 512 contiguous bytes.
__device__ __forceinline__ void LoadTile(const float* __restrict__ x,
                                         uint64_t d, uint64_t tile_start,
                                         bool aligned,
                                         uint32_t (&m)[kPerThread],
                                         bool (&valid)[kPerThread]) {
#pragma unroll
  for (int v = 0; v < kVecs; ++v) {
    const uint64_t i = tile_start + (uint64_t(v) * kThreads + threadIdx.x) * 4;
    if (aligned && i + 3 < d) {
      const float4 q = *reinterpret_cast<const float4*>(x + i);
      m[4 * v + 0] = MagnitudeBits(q.x);
      m[4 * v + 1] = MagnitudeBits(q.y);
      m[4 * v + 2] = MagnitudeBits(q.z);
      m[4 * v + 3] = MagnitudeBits(q.w);
#pragma unroll
      for (int e = 0; e < 4; ++e) valid[4 * v + e] = true;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        valid[4 * v + e] = i + e < d;
        m[4 * v + e] = i + e < d ? MagnitudeBits(x[i + e]) : 0u;
      }
    }
  }
}

// One tile per block: the candidates' keys are scanned into place in
// shared memory, one atomicAdd reserves the block's range in `keys`, and
// the block writes it out coalesced.
__global__ void __launch_bounds__(kThreads)
    CompactKernel(const float* __restrict__ x, uint64_t d,
                  const uint32_t* __restrict__ sorted, uint32_t s,
                  uint64_t rank, uint64_t* __restrict__ keys,
                  uint64_t capacity, int b, unsigned long long* counters,
                  bool aligned) {
  using Scan = cub::BlockScan<uint32_t, kThreads>;
  __shared__ typename Scan::TempStorage scan_storage;
  __shared__ uint64_t staged[kTile];
  __shared__ unsigned long long block_base;

  const uint32_t t = rank < s ? min(sorted[rank], kInfBits) : 0u;
  const uint64_t tile_start = uint64_t(blockIdx.x) * kTile;

  uint32_t m[kPerThread];
  bool valid[kPerThread];
  LoadTile(x, d, tile_start, aligned, m, valid);
  uint32_t n = 0;
  int non_finite = 0;
#pragma unroll
  for (int e = 0; e < kPerThread; ++e) {
    n += valid[e] && m[e] >= t;
    non_finite |= valid[e] && m[e] >= kInfBits;
  }
  uint32_t offset = 0, total = 0;
  Scan(scan_storage).ExclusiveSum(n, offset, total);
#pragma unroll
  for (int v = 0; v < kVecs; ++v) {
    const uint64_t i = tile_start + (uint64_t(v) * kThreads + threadIdx.x) * 4;
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const uint32_t mm = m[4 * v + e];
      if (valid[4 * v + e] && mm >= t)
        staged[offset++] = ThresholdKey(mm, static_cast<uint32_t>(i + e), b);
    }
  }
  if (threadIdx.x == 0)
    block_base = total ? atomicAdd(&counters[kCandidates], total) : 0ull;
  if (__syncthreads_or(non_finite) && threadIdx.x == 0)
    counters[kNonFinite] = 1;  // every writer writes 1: a benign race
  const uint64_t base = block_base;
  for (uint32_t j = threadIdx.x; j < total; j += kThreads)
    if (base + j < capacity) keys[base + j] = staged[j];
}

__global__ void ExtractIndexKernel(const uint64_t* __restrict__ keys_sorted,
                                   uint64_t k, int b,
                                   uint32_t* __restrict__ idx) {
  const uint64_t j = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < k) idx[j] = ThresholdKeyIndex(keys_sorted[j], b);
}

__global__ void PackValuesKernel(const float* __restrict__ x, uint64_t k,
                                 uint32_t* __restrict__ packed) {
  const uint64_t j = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j < k) packed[k + j] = __float_as_uint(x[packed[j]]);
}

unsigned Blocks(uint64_t n, unsigned threads) {
  return static_cast<unsigned>((n + threads - 1) / threads);
}

}  // namespace

cudaError_t LaunchGatherSample(const float* x, uint64_t d, uint32_t s,
                               uint32_t* sample, cudaStream_t stream) {
  if (s == 0) return cudaSuccess;
  GatherSampleKernel<<<Blocks(s, 256), 256, 0, stream>>>(x, d, s, sample);
  return cudaGetLastError();
}

size_t SortSampleTempBytes(uint32_t s) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortKeysDescending(
      nullptr, bytes, static_cast<const uint32_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), s, 0, 31);
  return bytes;
}

cudaError_t LaunchSortSampleDescending(void* temp, size_t temp_bytes,
                                       const uint32_t* sample,
                                       uint32_t* sorted, uint32_t s,
                                       cudaStream_t stream) {
  // Magnitude bits: bit 31 is clear.
  return cub::DeviceRadixSort::SortKeysDescending(temp, temp_bytes, sample,
                                                  sorted, s, 0, 31, stream);
}

cudaError_t LaunchCompactCandidates(const float* x, uint64_t d,
                                    const uint32_t* sorted, uint32_t s,
                                    uint64_t rank, uint64_t* keys,
                                    uint64_t capacity,
                                    unsigned long long* counters,
                                    cudaStream_t stream) {
  cudaError_t e = cudaMemsetAsync(
      counters, 0, kNumCounters * sizeof(unsigned long long), stream);
  if (e != cudaSuccess || d == 0) return e;
  const bool aligned = reinterpret_cast<uintptr_t>(x) % sizeof(float4) == 0;
  CompactKernel<<<Blocks(d, kTile), kThreads, 0, stream>>>(
      x, d, sorted, s, rank, keys, capacity, ThresholdIndexBits(d), counters,
      aligned);
  return cudaGetLastError();
}

size_t SelectTempBytes(uint64_t c, uint64_t k, uint64_t d) {
  const int b = ThresholdIndexBits(d);
  size_t keys_bytes = 0, idx_bytes = 0;
  cub::DeviceRadixSort::SortKeysDescending(
      nullptr, keys_bytes, static_cast<const uint64_t*>(nullptr),
      static_cast<uint64_t*>(nullptr), c, 0, 31 + b);
  cub::DeviceRadixSort::SortKeys(
      nullptr, idx_bytes, static_cast<const uint32_t*>(nullptr),
      static_cast<uint32_t*>(nullptr), k, 0, b);
  return std::max(keys_bytes, idx_bytes);
}

cudaError_t LaunchSelectTopK(void* temp, size_t temp_bytes,
                             const uint64_t* keys, uint64_t* keys_sorted,
                             uint64_t c, uint64_t k, uint64_t d,
                             uint32_t* idx_scratch, uint32_t* packed,
                             cudaStream_t stream) {
  const int b = ThresholdIndexBits(d);
  // Keys are unique (they hold the index), so the k largest are a set
  // that does not depend on the order the compaction wrote them in.
  cudaError_t e = cub::DeviceRadixSort::SortKeysDescending(
      temp, temp_bytes, keys, keys_sorted, c, 0, 31 + b, stream);
  if (e != cudaSuccess) return e;
  ExtractIndexKernel<<<Blocks(k, 256), 256, 0, stream>>>(keys_sorted, k, b,
                                                         idx_scratch);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, idx_scratch, packed,
                                        k, 0, b, stream);
}

cudaError_t LaunchPackValues(const float* x, uint64_t k, uint32_t* packed,
                             cudaStream_t stream) {
  if (k == 0) return cudaSuccess;
  PackValuesKernel<<<Blocks(k, 256), 256, 0, stream>>>(x, k, packed);
  return cudaGetLastError();
}

}  // namespace cuda
}  // namespace shefl
