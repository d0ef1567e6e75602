// GPU top-k == CPU TopK: the sample-threshold kernels (TopK on a CUDA
// tensor) against the exact CPU path, on the cases of
// tests/topk_threshold_test.cc. Built and registered only with a CUDA
// LibTorch (cuda/CMakeLists.txt), so CPU CI registers no skipped test.
#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/fed/schedule.h"
#include "common/learn/compress.h"
#include "common/sparse/topk_threshold.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

at::Tensor Randn(int64_t d, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn({d}, gen, at::kFloat);
}

void CheckParity(const at::Tensor& cpu, int64_t k) {
  INFO("d " << cpu.numel() << " k " << k);
  auto want = TopK(cpu, k);
  auto got = TopK(cpu.to(at::kCUDA), k);
  REQUIRE(want.ok());
  INFO((got.ok() ? std::string() : std::string(got.status().message())));
  REQUIRE(got.ok());
  CHECK(got->dim == want->dim);
  REQUIRE(got->nnz() == want->nnz());
  CHECK(got->indices == want->indices);
  CHECK(std::memcmp(got->values.data(), want->values.data(),
                    got->nnz() * sizeof(float)) == 0);
}

std::vector<int64_t> Ks(int64_t d) {
  return {0, 1, 2, d / 1000, d / 100, KForDensity(d, 0.1), d / 2, d - 1, d};
}

}  // namespace

TEST_CASE("CUDA top-k equals the CPU on random deltas", "[cuda]") {
  REQUIRE(at::hasCUDA());
  for (int64_t d : {1, 2, 3, 7, 100, 4096, 4097, 5000, 65537, 300001}) {
    for (int64_t k : Ks(d)) {
      const at::Tensor x = Randn(d, 7 * d + k);
      CheckParity(x, k);
      CheckParity((x * 4).round() / 4, k);
    }
  }
}

TEST_CASE("CUDA top-k at the model sizes", "[cuda]") {
  REQUIRE(at::hasCUDA());
  for (int64_t d : {582026, 11173962}) {
    const at::Tensor x = Randn(d, 11);
    CheckParity(x, KForDensity(d, 0.1));
    CheckParity(x, KForDensity(d, 0.01));
  }
  // A view at an odd offset: the compaction's unaligned path.
  const at::Tensor base = Randn(100003, 12);
  CheckParity(base.slice(0, 1).contiguous(), 5000);
  CheckParity(base.slice(0, 3, 100003), 5000);
}

TEST_CASE("CUDA top-k with ties everywhere and many zeros", "[cuda]") {
  REQUIRE(at::hasCUDA());
  const int64_t d = 100000;
  at::Tensor same = at::full({d}, 0.5f);
  same.index_put_({at::arange(1, d, 2)}, -0.5f);
  for (int64_t k : std::vector<int64_t>{1, 1000, KForDensity(d, 0.1), d - 1})
    CheckParity(same, k);
  CheckParity(at::zeros({d}), 10);
  at::Tensor sparse = Randn(d, 3) * (at::rand({d}) < 0.05).to(at::kFloat);
  sparse.slice(0, 0, 100).fill_(-0.0f);
  const int64_t nonzero = sparse.ne(0).sum().item<int64_t>();
  for (int64_t k : {nonzero / 2, nonzero, nonzero + 1, nonzero + 5000})
    CheckParity(sparse, k);
  at::Tensor pm = at::arange(d, at::kFloat).remainder(7) - 3;
  pm.slice(0, 0, 50).fill_(1e-40f);
  pm.slice(0, 50, 100).fill_(-1e-40f);
  for (int64_t k : std::vector<int64_t>{1, 7, d / 7, 2 * d / 7 + 3, d - 10})
    CheckParity(pm, k);
}

TEST_CASE("CUDA top-k on heavy tails and a misleading sample", "[cuda]") {
  REQUIRE(at::hasCUDA());
  const int64_t d = 200003;
  at::Generator gen = at::detail::createCPUGenerator(5);
  const at::Tensor cauchy =
      at::randn({d}, gen, at::kFloat) / at::randn({d}, gen, at::kFloat);
  for (int64_t k : {1, 20, 2000, 20001, 100000}) CheckParity(cauchy, k);

  const int64_t n = 1000000;
  const uint64_t s = ThresholdSampleSize(n);
  std::vector<int64_t> sampled(s);
  for (uint64_t j = 0; j < s; ++j)
    sampled[j] = static_cast<int64_t>(ThresholdSamplePosition(j, s, n));
  const at::Tensor pos = at::tensor(sampled, at::kLong);
  at::Tensor high = Randn(n, 21) * 1e-3f;
  high.index_put_({pos}, at::arange(1, static_cast<int64_t>(s) + 1, at::kFloat));
  CheckParity(high, 3 * static_cast<int64_t>(s));  // t too high: retries
  at::Tensor low = Randn(n, 22) * 1e-3f;
  low.index_put_({pos + 1}, 1000.0f);
  low.index_put_({pos}, 0.0f);
  CheckParity(low, KForDensity(n, 0.1));  // the tail between samples
}

TEST_CASE("CUDA top-k names NaN and Inf like the CPU", "[cuda]") {
  REQUIRE(at::hasCUDA());
  at::Tensor x = Randn(50000, 31);
  x[4321] = std::nanf("");
  auto r = TopK(x.to(at::kCUDA), 100);
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()).find("NaN at index 4321") !=
        std::string::npos);
  x[4321] = 0.0f;
  x[49999] = -INFINITY;
  r = TopK(x.to(at::kCUDA), 100);
  REQUIRE_FALSE(r.ok());
  CHECK(std::string(r.status().message()).find("Inf at index 49999") !=
        std::string::npos);
}

}  // namespace shefl
