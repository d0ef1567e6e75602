// Where training runs and how many threads it may use.
#ifndef SHEFL_COMMON_LEARN_DEVICE_H_
#define SHEFL_COMMON_LEARN_DEVICE_H_

#include <c10/core/Device.h>

#include <string>

#include "absl/status/statusor.h"

namespace shefl {

// Parses the config's device string:
//   "auto"   -> cuda:0 if CUDA is available, else cpu
//   "cpu"    -> cpu
//   "cuda"   -> cuda:0;  "cuda:N" -> cuda:N
// "cuda"/"cuda:N" without CUDA, N out of range, or any other string is
// InvalidArgument naming the string. A CUDA device also gets
// KeepFp32OnCuda.
absl::StatusOr<c10::Device> ResolveDevice(const std::string& spec);

// Turns TF32 off for cuDNN and cuBLAS in this process, so that fp32
// training on a GPU rounds as fp32 does on the CPU and the stacked and
// one-at-a-time paths give the same weights.
void KeepFp32OnCuda();

// Whether this LibTorch build sees a CUDA device.
bool CudaAvailable();

// Gives torch `torch_threads` intra-op threads (<= 0: the hardware's
// cores) and holds OpenBLAS to one thread. Torch's own parallelism and
// OpenBLAS's threads oversubscribe the cores otherwise (docs/DESIGN.md,
// "Ensemble-native training and the round on a GPU": a cnn step took 11-14 ms
// instead of 5-7 ms). OpenBLAS is reached through
// dlsym("openblas_set_num_threads") so that shefl does not link it; where the
// symbol is missing nothing happens. Setting the environment variable
// OPENBLAS_NUM_THREADS=1 before start does the same and is what the launch
// scripts do. Returns the number of torch threads set.
int ConfigureThreads(int torch_threads);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_DEVICE_H_
