// bf16 where the hardware has it (common/learn/precision.h): which CPUs
// qualify, the clear refusal elsewhere naming the key, an autocast scope
// that leaves its thread as it found it, and bf16 training that keeps fp32
// weights and learns about as fp32 does.
#include "common/learn/precision.h"
#include "common/learn/flat_state.h"
#include "common/learn/train.h"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>

#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

namespace shefl {
namespace {

Dataset Images(int64_t n, uint64_t seed) {
  at::manual_seed(seed);
  at::Tensor templates = at::randn({10, 1, 28, 28});
  at::Tensor y = at::randint(10, {n}, at::kLong);
  at::Tensor x = templates.index_select(0, y) + 0.5 * at::randn({n, 1, 28, 28});
  return {"images", x, y, 10};
}

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

TEST_CASE("bf16 training keeps fp32 weights and learns about as fp32 does") {
  Dataset d = Images(96, 4);
  std::vector<int64_t> all(d.size());
  std::iota(all.begin(), all.end(), 0);
  auto train = [&](const std::string& precision) {
    auto m = MakeInitialisedModel("cnn", *ShapeOf(d, 0), 3, 0);
    REQUIRE(m.ok());
    TrainConfig cfg;
    cfg.batch_size = 16;
    cfg.precision = precision;
    LocalTrainParams p;
    p.lr = 0.05;
    p.epochs = 3;
    auto stats = LocalTrain(**m, d, all, cfg, p);
    REQUIRE(stats.ok());
    for (const at::Tensor& w : (*m)->parameters()) CHECK(w.scalar_type() == at::kFloat);
    return std::make_pair(Flatten(**m), *stats);
  };
  const auto [w32, s32] = train("fp32");
  const auto [w16, s16] = train("bf16");
  CHECK_FALSE(at::equal(w32, w16));  // bf16 did run
  CHECK(std::isfinite(s16.mean_loss));
  CHECK(s16.last_epoch_loss < s16.first_loss * 0.9);  // it learns
  CHECK(s16.last_epoch_loss == Approx(s32.last_epoch_loss).margin(0.15));
  // The weights stay close: bf16 changes the rounding, not the descent.
  CHECK((w16 - w32).norm().item<double>() < 0.05 * w32.norm().item<double>());
}

}  // namespace
}  // namespace shefl
