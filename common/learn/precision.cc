#include "common/learn/precision.h"

#include <ATen/autocast_mode.h>

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shefl {

bool CpuInfoHasBf16(const std::string& cpuinfo) {
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    if (!absl::StartsWith(line, "flags")) continue;
    for (absl::string_view flag : absl::StrSplit(line, ' '))
      if (flag == "avx512_bf16" || flag == "amx_bf16") return true;
  }
  return false;
}

bool CpuHasBf16() {
  static const bool has = [] {
    std::ifstream in("/proc/cpuinfo");
    std::stringstream text;
    text << in.rdbuf();
    return CpuInfoHasBf16(text.str());
  }();
  return has;
}

std::string ResolvePrecision(const std::string& precision, c10::Device device) {
  if (precision != "auto") return precision;
  return device.is_cuda() || (device.is_cpu() && CpuHasBf16()) ? "bf16" : "fp32";
}

absl::Status CheckPrecision(const std::string& key, const std::string& precision,
                            c10::Device device) {
  if (precision == "fp32" || precision == "auto") return absl::OkStatus();
  if (precision != "bf16")
    return absl::InvalidArgumentError(
        absl::StrCat(key, ": '", precision, "' is not auto, fp32 or bf16"));
  if (device.is_cuda() || (device.is_cpu() && CpuHasBf16())) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      key, ": bf16 needs a CUDA device or a CPU with AVX512_BF16 or AMX (this ",
      device.str(), " has neither; bf16 emulated there is slower than fp32): use fp32"));
}

AutocastScope::AutocastScope(const std::string& precision, c10::Device device)
    : active_(ResolvePrecision(precision, device) == "bf16"), cuda_(device.is_cuda()) {
  if (!active_) return;
  if (cuda_) {
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
    at::autocast::set_enabled(true);
  } else {
    was_enabled_ = at::autocast::is_cpu_enabled();
    was_dtype_ = at::autocast::get_autocast_cpu_dtype();
    at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
    at::autocast::set_cpu_enabled(true);
  }
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // The cast weights are cached for the scope's life: drop them with it.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  if (cuda_) {
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
  } else {
    at::autocast::set_cpu_enabled(was_enabled_);
    at::autocast::set_autocast_cpu_dtype(was_dtype_);
  }
}

}  // namespace shefl
