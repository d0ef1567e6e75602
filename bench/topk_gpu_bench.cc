// The sample-threshold top-k (docs/PERFORMANCE.md, "13b. The measurements")
// against the other top-k paths, on N(0, 1) deltas of d = 582,026 (FMNIST
// CNN), 11,173,962 (ResNet-18) and 100,000,000 floats at k = ceil(0.1 d)
// and ceil(0.01 d).
//
// CPU, one thread, thread CPU time (the machine is shared; wall time
// misleads there): ThresholdTopK (common/sparse/topk_threshold.h, the GPU
// algorithm's reference), RadixTopK (TopK's CPU path), RadixTopKTwoPass
// and at::topk of |x| (unsorted).
// CUDA (only when built with a CUDA LibTorch): TopK on the device tensor
// (our kernels, result copied into the host SparseDelta: "ours", wall
// time), our kernels alone ("ours_dev", the selection left on the device),
// at::topk of |x| on the device (unsorted, no copy), at::topk followed by
// what ours also does (indices sorted ascending, values gathered:
// "topk+idx", the like-for-like baseline), and one read of the delta
// (x.sum()): the memory bound, with the achieved bandwidth;
// "of_bound" = t_read / t_ours_dev.
// Medians of --reps runs (default 5; 3 for 100M on the CPU).
//   build/bin/topk_gpu_bench [--reps=5] [--max_d=100000000] [--cpu=0|1]
//       [--cuda=0|1]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/fed/schedule.h"
#include "common/learn/compress.h"
#include "common/sparse/radix_topk.h"
#include "common/sparse/topk_threshold.h"

#ifdef SHEFL_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "cuda/topk_cuda.h"
#endif

namespace shefl {
namespace {

using bench::Median;
using bench::ThreadCpuMs;
using bench::WallMs;

// Median thread-CPU ms of `reps` calls, after one warm-up call.
double CpuMs(int reps, const std::function<void()>& f) {
  f();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double t0 = ThreadCpuMs();
    f();
    ms.push_back(ThreadCpuMs() - t0);
  }
  return Median(ms);
}

struct Options {
  int reps = 5;
  int64_t max_d = 100000000;
  bool cpu = true;
  bool cuda = true;
};

constexpr char kUsage[] =
    "usage: topk_gpu_bench [--reps=N] [--max_d=D] [--cpu=0|1] [--cuda=0|1]\n"
    "       topk_gpu_bench [--reps=N] [--max_d=D] --cpu|--cuda   (one part)\n"
    "  Top-k by magnitude at k = 0.1 d and 0.01 d, d = 582,026, 11,173,962\n"
    "  and 100,000,000 (up to --max_d): the sampled threshold against the\n"
    "  radix select and at::topk. CPU part: one thread, median thread-CPU\n"
    "  ms of --reps runs (default 5). CUDA part: only in a build with a\n"
    "  CUDA LibTorch, on a GPU (wall ms and bandwidth); a CPU-only build\n"
    "  says it was not built. Both parts run unless turned off with 0.\n";

// --cpu=0|1 turns the part on or off; a bare --cpu picks it alone.
bench::BenchFlag Part(bool* on, bool* other) {
  return [on, other](const char* v) {
    if (v != nullptr) return bench::BoolFlag(on)(v);
    *on = true;
    *other = false;
    return true;
  };
}

bench::BenchFlags Flags(Options* o) {
  return {{"--reps", bench::IntFlag(&o->reps, 1)},
          {"--max_d", bench::IntFlag(&o->max_d, 1)},
          {"--cpu", Part(&o->cpu, &o->cuda)},
          {"--cuda", Part(&o->cuda, &o->cpu)}};
}

const std::vector<int64_t> kSizes = {582026, 11173962, 100000000};
const std::vector<double> kDensities = {0.1, 0.01};

at::Tensor Delta(int64_t d) {
  at::Generator gen = at::detail::createCPUGenerator(42);
  return at::randn({d}, gen, at::kFloat);
}

void CpuPart(const Options& o) {
  std::printf("CPU, one thread, median thread-CPU ms\n");
  std::printf("%-10s %-6s %9s %10s %10s %10s %10s %9s %9s %5s\n", "d", "k/d",
              "k", "threshold", "radix", "two_pass", "at::topk", "thr/rad",
              "cand/k", "tries");
  for (int64_t d : kSizes) {
    if (d > o.max_d) continue;
    const at::Tensor x = Delta(d);
    const float* p = x.data_ptr<float>();
    const int reps = d >= 50000000 ? std::min(o.reps, 3) : o.reps;
    for (double rho : kDensities) {
      const int64_t k = KForDensity(d, rho);
      ThresholdTopKStats st;
      SparseDelta a, b;
      const double thr = CpuMs(reps, [&] { ThresholdTopK(p, d, k, &a, &st); });
      const double rad = CpuMs(reps, [&] { RadixTopK(p, d, k, &b); });
      const double two =
          CpuMs(reps, [&] { SparseDelta c; RadixTopKTwoPass(p, d, k, &c); });
      const double tor = CpuMs(reps, [&] {
        auto r = at::topk(x.abs(), k, 0, /*largest=*/true, /*sorted=*/false);
        (void)r;
      });
      if (a.indices != b.indices || a.values != b.values)
        std::printf("MISMATCH threshold vs radix at d %lld k %lld\n",
                    static_cast<long long>(d), static_cast<long long>(k));
      std::printf("%-10lld %-6.2f %9lld %10.3f %10.3f %10.3f %10.3f %9.2f %9.3f %5d\n",
                  static_cast<long long>(d), rho, static_cast<long long>(k),
                  thr, rad, two, tor, thr / rad,
                  static_cast<double>(st.candidates) / k, st.attempts);
    }
  }
}

#ifdef SHEFL_WITH_CUDA
// Median ms per call of f on the current stream, by CUDA events around
// `inner` calls (short kernels need many), after warm-up.
double CudaMs(int reps, int inner, const std::function<void()>& f) {
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    cudaEventRecord(start, stream);
    for (int i = 0; i < inner; ++i) f();
    cudaEventRecord(stop, stream);
    cudaEventSynchronize(stop);
    float t = 0;
    cudaEventElapsedTime(&t, start, stop);
    ms.push_back(t / inner);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return Median(ms);
}

// Median wall ms of a call that synchronises itself (TopK ends with the
// copy to the host).
double WallCallMs(int reps, int inner, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();
  c10::cuda::device_synchronize();
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const double t0 = WallMs();
    for (int i = 0; i < inner; ++i) f();
    c10::cuda::device_synchronize();
    ms.push_back((WallMs() - t0) / inner);
  }
  return Median(ms);
}

void CudaPart(const Options& o) {
  if (!at::hasCUDA()) {
    std::printf("CUDA: no device\n");
    return;
  }
  std::printf("\nCUDA, median ms per call\n");
  std::printf("%-10s %-6s %9s %9s %9s %9s %9s %9s %9s %8s %9s\n", "d", "k/d",
              "k", "ours", "ours_dev", "at::topk", "topk+idx", "read", "GB/s",
              "of_bound", "parity");
  for (int64_t d : kSizes) {
    if (d > o.max_d) continue;
    const at::Tensor host = Delta(d);
    const at::Tensor x = host.to(at::kCUDA);
    const int inner = d < 1000000 ? 50 : d < 20000000 ? 20 : 5;
    const double read = CudaMs(o.reps, inner, [&] { (void)x.sum(); });
    const double gbps = 4.0 * d / (read * 1e6);
    for (double rho : kDensities) {
      const int64_t k = KForDensity(d, rho);
      const double ours = WallCallMs(o.reps, inner, [&] { (void)TopK(x, k); });
      const double ours_dev = CudaMs(o.reps, inner, [&] {
        (void)ThresholdTopKCudaPacked(x, static_cast<uint64_t>(k));
      });
      const double torch = CudaMs(o.reps, inner, [&] {
        (void)at::topk(x.abs(), k, 0, /*largest=*/true, /*sorted=*/false);
      });
      // What ours leaves on the device, from at::topk: indices ascending
      // and their values.
      const double torch_idx = CudaMs(o.reps, inner, [&] {
        auto top = at::topk(x.abs(), k, 0, /*largest=*/true, /*sorted=*/false);
        const at::Tensor idx = std::get<0>(at::sort(std::get<1>(top)));
        (void)x.index_select(0, idx);
      });
      auto g = TopK(x, k);
      SparseDelta c;
      RadixTopK(host.data_ptr<float>(), d, k, &c);
      const bool same = g.ok() && g->indices == c.indices && g->values == c.values;
      std::printf("%-10lld %-6.2f %9lld %9.3f %9.3f %9.3f %9.3f %9.3f %9.0f %8.2f %9s\n",
                  static_cast<long long>(d), rho, static_cast<long long>(k),
                  ours, ours_dev, torch, torch_idx, read, gbps, read / ours_dev,
                  same ? "same" : "DIFFERS");
    }
  }
}
#endif

}  // namespace
}  // namespace shefl

int main(int argc, char** argv) {
  shefl::Options o;
  const shefl::bench::BenchArgs args = shefl::bench::ParseBenchArgs(
      argc, argv, shefl::kUsage, shefl::Flags(&o), /*max_positional=*/0);
  if (args.exit_code >= 0) return args.exit_code;
  at::set_num_threads(1);  // the CPU comparison is single-threaded
  if (o.cpu) shefl::CpuPart(o);
#ifdef SHEFL_WITH_CUDA
  if (o.cuda) shefl::CudaPart(o);
#else
  if (o.cuda) std::printf("\nCUDA part: not built (CPU-only LibTorch)\n");
#endif
  return 0;
}
