// bf16 where the hardware has it (train.precision, eval.precision): the
// forward pass and the loss run under autocast to bfloat16; the weights
// (master copy), the optimiser state, the flat state, the wire and the
// books stay fp32. CPUs need AVX512_BF16 or AMX: without them oneDNN
// emulates bf16 and it is slower than fp32, so bf16 there is refused at
// start rather than silently slow. CUDA devices take it (Ampere and later
// have bf16 units).
// Thread-compatible: AutocastScope acts on its own thread's autocast state.
#ifndef SHEFL_COMMON_LEARN_PRECISION_H_
#define SHEFL_COMMON_LEARN_PRECISION_H_

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <string>

#include "absl/status/status.h"

namespace shefl {

// True when /proc/cpuinfo-style text lists avx512_bf16 or amx_bf16 among a
// processor's flags.
bool CpuInfoHasBf16(const std::string& cpuinfo);
// The same for this machine's CPU (read once).
bool CpuHasBf16();

// "auto": "bf16" on a CUDA device or a CPU with bf16 units, "fp32"
// elsewhere; any other value unchanged. The same config thus trains in
// bf16 on one host and fp32 on another: a run's numbers depend on its
// hardware under auto, not under fp32 or bf16.
std::string ResolvePrecision(const std::string& precision, c10::Device device);

// OK for "fp32" and "auto" anywhere and for "bf16" on a CUDA device or a
// CPU with bf16 units; otherwise InvalidArgument naming `key` (e.g.
// "train.precision") and what is missing.
absl::Status CheckPrecision(const std::string& key, const std::string& precision,
                            c10::Device device);

// Autocast to bf16 on `device`'s kind for this thread while alive, when
// `precision` is "bf16" (or "auto" resolving to it); nothing otherwise. Restores the state it found.
class AutocastScope {
 public:
  AutocastScope(const std::string& precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  bool cuda_ = false;
  bool was_enabled_ = false;
  c10::ScalarType was_dtype_ = c10::ScalarType::Float;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_PRECISION_H_
