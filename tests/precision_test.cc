// bf16 where the hardware has it (common/learn/precision.h): which CPUs
// qualify, the clear refusal elsewhere naming the key, and an autocast
// scope that leaves its thread as it found it. bf16 training itself:
// train_test.
#include "common/learn/precision.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("a CPU qualifies for bf16 by its avx512_bf16 or amx_bf16 flag") {
  CHECK(CpuInfoHasBf16("processor : 0\nflags : fpu avx512f avx512_bf16 sse\n"));
  CHECK(CpuInfoHasBf16("flags\t\t: fpu amx_bf16 amx_tile\n"));
  CHECK_FALSE(CpuInfoHasBf16("flags : fpu avx512f avx512_bf16x sse\n"));
  CHECK_FALSE(CpuInfoHasBf16("model name : avx512_bf16\nflags : fpu avx2\n"));
  CHECK_FALSE(CpuInfoHasBf16(""));
}

TEST_CASE("bf16 is taken where the hardware has it and refused elsewhere, naming the key") {
  CHECK(CheckPrecision("train.precision", "fp32", c10::Device(c10::kCPU)).ok());
  CHECK(CheckPrecision("eval.precision", "bf16", c10::Device(c10::kCUDA, 0)).ok());
  const auto fp16 = CheckPrecision("train.precision", "fp16", c10::Device(c10::kCPU));
  CHECK_THAT(std::string(fp16.message()), Catch::Contains("train.precision: 'fp16'"));
  const auto cpu = CheckPrecision("eval.precision", "bf16", c10::Device(c10::kCPU));
  // Both outcomes are checked: which one this machine gives follows its CPU.
  if (CpuHasBf16()) {
    CHECK(cpu.ok());
  } else {
    CHECK(absl::IsInvalidArgument(cpu));
    CHECK_THAT(std::string(cpu.message()),
               Catch::Contains("eval.precision: bf16 needs a CUDA device or a CPU with "
                               "AVX512_BF16 or AMX"));
  }
}

TEST_CASE("auto is bf16 where the hardware has it and fp32 elsewhere, and always accepted") {
  const c10::Device cpu(c10::kCPU), cuda(c10::kCUDA, 0);
  CHECK(ResolvePrecision("auto", cuda) == "bf16");
  CHECK(ResolvePrecision("auto", cpu) == (CpuHasBf16() ? "bf16" : "fp32"));
  CHECK(ResolvePrecision("fp32", cuda) == "fp32");
  CHECK(ResolvePrecision("bf16", cpu) == "bf16");
  CHECK(CheckPrecision("train.precision", "auto", cpu).ok());
  const at::Tensor a = at::randn({4, 8}), b = at::randn({8, 3});
  AutocastScope scope("auto", cpu);
  CHECK(at::mm(a, b).scalar_type() == (CpuHasBf16() ? at::kBFloat16 : at::kFloat));
}

TEST_CASE("an autocast scope gives bf16 matmuls inside and restores its thread after") {
  const at::Tensor a = at::randn({4, 8}), b = at::randn({8, 3});
  REQUIRE_FALSE(at::autocast::is_cpu_enabled());
  {
    AutocastScope fp32("fp32", c10::Device(c10::kCPU));
    CHECK_FALSE(at::autocast::is_cpu_enabled());
    CHECK(at::mm(a, b).scalar_type() == at::kFloat);
  }
  {
    AutocastScope bf16("bf16", c10::Device(c10::kCPU));
    CHECK(at::autocast::is_cpu_enabled());
    CHECK(at::mm(a, b).scalar_type() == at::kBFloat16);
  }
  CHECK_FALSE(at::autocast::is_cpu_enabled());
  CHECK(at::mm(a, b).scalar_type() == at::kFloat);
}

}  // namespace
}  // namespace shefl
