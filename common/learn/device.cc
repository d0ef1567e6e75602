#include "common/learn/device.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <dlfcn.h>
#include <torch/cuda.h>

#include <thread>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shefl {

bool CudaAvailable() { return torch::cuda::is_available(); }

absl::StatusOr<c10::Device> ResolveDevice(const std::string& spec) {
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec == "auto") {
    return CudaAvailable() ? c10::Device(c10::kCUDA, 0)
                           : c10::Device(c10::kCPU);
  }
  int index = 0;
  if (spec != "cuda") {
    if (!absl::StartsWith(spec, "cuda:") ||
        !absl::SimpleAtoi(spec.substr(5), &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("device '", spec, "' is not auto, cpu, cuda or cuda:N"));
    }
  }
  if (!CudaAvailable()) {
    // A CPU-only LibTorch (Debian's libtorch-dev) registers no CUDA device
    // guard; a CUDA one without a usable GPU does.
    if (!c10::impl::hasDeviceGuardImpl(c10::DeviceType::CUDA))
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", spec, "': this build's LibTorch has no CUDA (a CPU-only "
          "LibTorch, such as Debian's libtorch-dev); use --device cpu or auto, "
          "or build against a CUDA LibTorch (docs/GPU.md)"));
    return absl::InvalidArgumentError(absl::StrCat(
        "device '", spec, "': this build has CUDA but finds no usable GPU "
        "(check nvidia-smi, the driver, and CUDA_VISIBLE_DEVICES)"));
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  if (index >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("device '", spec, "': only ", count, " CUDA device(s)"));
  }
  KeepFp32OnCuda();
  return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
}

void KeepFp32OnCuda() {
  // cuDNN's convolutions default to TF32 (a 10-bit mantissa) on Ampere and
  // later: the stacked and the one-at-a-time paths then round differently,
  // and after a few dozen SGD steps their weights differed by up to 7%
  // (cohort_cuda_test on an H200). fp32 means IEEE fp32 here, as on the CPU;
  // train.precision: bf16 is the fast path.
  at::globalContext().setAllowTF32CuDNN(false);
  at::globalContext().setAllowTF32CuBLAS(false);
}

int ConfigureThreads(int torch_threads) {
  using SetThreads = void (*)(int);
  if (void* sym = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<SetThreads>(sym)(1);
  }
  if (torch_threads <= 0) {
    torch_threads = static_cast<int>(std::thread::hardware_concurrency());
    if (torch_threads <= 0) torch_threads = 1;
  }
  at::set_num_threads(torch_threads);
  return torch_threads;
}

}  // namespace shefl
