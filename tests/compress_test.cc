#include "common/learn/compress.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "common/fed/schedule.h"
#include "common/sparse/codec.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

at::Tensor RandomDelta(int64_t d, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn({d}, gen, at::kFloat);
}

// The k largest |x| with ties to the lower index, ascending: by a full sort.
std::vector<uint32_t> ReferenceTopK(const at::Tensor& x, int64_t k) {
  const at::Tensor c = x.contiguous();
  const float* p = c.data_ptr<float>();
  std::vector<uint32_t> order(c.numel());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::fabs(p[a]) > std::fabs(p[b]);
  });
  order.resize(k);
  std::sort(order.begin(), order.end());
  return order;
}

SparseDelta MustTopK(const at::Tensor& x, int64_t k) {
  auto s = TopK(x, k);
  INFO((s.ok() ? "" : std::string(s.status().message())));
  REQUIRE(s.ok());
  return *s;
}

void CheckValuesMatch(const SparseDelta& s, const at::Tensor& x) {
  const at::Tensor c = x.contiguous();
  const float* p = c.data_ptr<float>();
  size_t wrong = 0;
  for (size_t i = 0; i < s.nnz(); ++i) {
    if (s.values[i] != p[s.indices[i]]) ++wrong;
  }
  CHECK(wrong == 0);
}

bool Ascending(const std::vector<uint32_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::greater_equal<>()) ==
         v.end();
}

}  // namespace

TEST_CASE("KForDensity is ceil(rho * d) without floating error") {
  CHECK(KForDensity(582026, 0.1) == 58203);
  CHECK(KForDensity(582026, 0.02) == 11641);
  CHECK(KForDensity(10, 0.1) == 1);     // 0.1 * 10 is a hair above 1
  CHECK(KForDensity(100, 0.07) == 7);   // 0.07 * 100 = 7.000000000000001
  CHECK(KForDensity(3, 0.5) == 2);
  CHECK(KForDensity(1000, 0.0) == 0);
  CHECK(KForDensity(1000, 1.0) == 1000);
  CHECK(KForDensity(1000, 3.0) == 1000);
  CHECK(KForDensity(0, 0.5) == 0);
  CHECK(KForDensity(1000, std::nan("")) == 0);
  for (int j = 0; j <= 100; ++j) {
    INFO("rho=" << j / 100.0);
    CHECK(KForDensity(100, j / 100.0) == j);
    CHECK(KForDensity(1000, j / 100.0) == 10 * j);
  }
}

TEST_CASE("KForHpc spreads r LPC budgets over M models") {
  CHECK(KForHpc(582026, 0.1, 1, 5) == 11641);  // ceil(11640.52)
  CHECK(KForHpc(582026, 0.1, 5, 5) == 58203);
  CHECK(KForHpc(1000, 0.5, 50, 5) == 1000);    // capped at d
  CHECK(KForHpc(1000, 0.1, 0, 5) == KForDensity(1000, 0.1));  // r = 0: r = M
  for (int64_t d : {1, 7, 100, 582026, 11200000}) {
    for (double rho : {0.001, 0.02, 0.1, 0.3, 1.0}) {
      for (int64_t M : {1, 3, 5, 8}) {
        INFO("d=" << d << " rho=" << rho << " M=" << M);
        const int64_t full = KForDensity(d, rho);
        CHECK(KForHpc(d, rho, static_cast<double>(M), M) == full);
        // ceil(x / M) * M lies in [ceil(x), ceil(x) + M - 1].
        const int64_t low = KForHpc(d, rho, 1, M);
        CHECK(low * M >= full);
        CHECK(low * M <= full + M - 1);
        CHECK(KForHpc(d, rho, 2.0 * M, M) ==
              std::min<int64_t>(d, KForDensity(d, 2 * rho)));
      }
    }
  }
}

TEST_CASE("TopK keeps the largest magnitudes, indices ascending") {
  const at::Tensor x = RandomDelta(20000, 1);
  for (int64_t k : {1, 17, 200, 2000, 19999}) {
    INFO("k=" << k);
    const SparseDelta s = MustTopK(x, k);
    CHECK(s.dim == 20000);
    REQUIRE(s.nnz() == static_cast<size_t>(k));
    CHECK(Ascending(s.indices));
    CHECK(s.indices == ReferenceTopK(x, k));
    CheckValuesMatch(s, x);
    // Every kept magnitude is at least every dropped one.
    const at::Tensor dense = Densify(s);
    const at::Tensor kept = dense != 0;
    const float min_kept = x.abs().masked_select(kept).min().item<float>();
    const float max_dropped =
        x.abs().masked_select(kept.logical_not()).max().item<float>();
    CHECK(min_kept >= max_dropped);
  }
}

TEST_CASE("TopK breaks ties by lower index") {
  // 1000 entries of magnitude 1 with alternating signs, 10 of magnitude 2.
  at::Tensor x = at::ones({1000});
  x.index_put_({at::arange(1, 1000, 2)}, -1.0f);
  const std::vector<int64_t> big = {3, 99, 500, 501, 640, 700, 777, 800, 901,
                                    999};
  for (int64_t i : big) x[i] = 2.0f;
  const SparseDelta s = MustTopK(x, 50);
  REQUIRE(s.nnz() == 50);
  CHECK(s.indices == ReferenceTopK(x, 50));
  for (int64_t i : big) {
    CHECK(std::binary_search(s.indices.begin(), s.indices.end(), i));
  }
  // The other 40 are the lowest-index entries of magnitude 1: 0..40
  // without 3 (a big one).
  std::vector<uint32_t> ties;
  for (uint32_t i : s.indices) {
    if (std::find(big.begin(), big.end(), i) == big.end()) ties.push_back(i);
  }
  std::vector<uint32_t> want;
  for (uint32_t i = 0; want.size() < 40; ++i) {
    if (i != 3) want.push_back(i);
  }
  CHECK(ties == want);
  CheckValuesMatch(s, x);
  // All equal, zeros included: the first k, and the same on every call.
  const SparseDelta z = MustTopK(at::zeros({100}), 10);
  std::vector<uint32_t> first10(10);
  std::iota(first10.begin(), first10.end(), 0u);
  CHECK(z.indices == first10);
  CHECK(MustTopK(x, 50).indices == s.indices);
}

TEST_CASE("the CPU radix select equals the tensor-ops top-k, ties included") {
  int checked = 0;
  for (int64_t d : {1, 2, 7, 1000, 65537, 300001}) {
    for (double density : {0.0001, 0.02, 0.1, 0.5, 0.999}) {
      const int64_t k = std::max<int64_t>(1, static_cast<int64_t>(density * d));
      at::Tensor x = RandomDelta(d, 1000 + d + k);
      // Coarse values make ties at the k-th magnitude, and signed zeros
      // and subnormals must order like their magnitudes.
      if (k % 2 == 0) x = (x * 4).round() / 4;
      if (d > 2) {
        x[0] = -0.0f;
        x[1] = 1e-40f;
        x[2] = -1e-40f;
      }
      INFO("d " << d << " k " << k);
      auto radix = TopK(x, k);
      auto ops = TopKWithTensorOps(x, k);
      REQUIRE(radix.ok());
      REQUIRE(ops.ok());
      CHECK(radix->indices == ops->indices);
      CHECK(radix->values == ops->values);
      CHECK(radix->indices == ReferenceTopK(x, k));
      ++checked;
    }
  }
  CHECK(checked == 30);
  // Every magnitude equal: the first k indices win.
  const SparseDelta same = MustTopK(at::full({1000}, -0.5f), 10);
  CHECK(same.indices == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("TopK edge cases: k = 0, k = d, clamping, bad input") {
  const at::Tensor x = RandomDelta(1000, 2);
  SparseDelta s = MustTopK(x, 0);
  CHECK(s.dim == 1000);
  CHECK(s.nnz() == 0);
  CHECK(MustTopK(x, -5).nnz() == 0);
  for (int64_t k : {1000, 5000}) {
    s = MustTopK(x, k);
    REQUIRE(s.nnz() == 1000);
    CHECK(s.indices.front() == 0);
    CHECK(s.indices.back() == 999);
    CHECK(Ascending(s.indices));
    CheckValuesMatch(s, x);
  }
  CHECK(MustTopK(at::zeros({0}), 3).nnz() == 0);
  // A non-contiguous 1-D view.
  const at::Tensor strided = RandomDelta(2000, 3).slice(0, 0, 2000, 2);
  CHECK(MustTopK(strided, 30).indices == ReferenceTopK(strided, 30));

  auto err = [](const at::Tensor& t, const std::string& word) {
    auto r = TopK(t, 3);
    REQUIRE_FALSE(r.ok());
    INFO(r.status().message());
    CHECK(std::string(r.status().message()).find(word) != std::string::npos);
  };
  err(at::zeros({4, 4}), "1-D");
  err(at::zeros({10}, at::kDouble), "fp32");
  at::Tensor bad = at::zeros({10});
  bad[5] = std::nanf("");
  err(bad, "NaN at index 5");
  bad[5] = 0.0f;
  bad[7] = -INFINITY;
  err(bad, "Inf at index 7");
  err(at::Tensor(), "undefined");
}

// Hidden from the default run (CI has no GPU); on a GPU machine run
//   build/bin/compress_test "[cuda]"
TEST_CASE("TopK on CUDA matches the CPU", "[.][cuda]") {
  REQUIRE(at::hasCUDA());  // asked for explicitly: no CUDA is a failure
  at::Tensor x = RandomDelta(582026, 4);
  x.slice(0, 0, 5000).fill_(0.25f);  // ties too
  for (int64_t k : {11641, 58203}) {
    const SparseDelta cpu = MustTopK(x, k);
    const SparseDelta gpu = MustTopK(x.to(at::kCUDA), k);
    CHECK(gpu.indices == cpu.indices);
    CHECK(gpu.values == cpu.values);
  }
}

TEST_CASE("Densify places values, rejects bad input") {
  const SparseDelta s{6, {1, 4}, {2.5f, -1.0f}};
  const at::Tensor dense = Densify(s);
  REQUIRE(dense.defined());
  CHECK(at::equal(dense, at::tensor({0.0f, 2.5f, 0.0f, 0.0f, -1.0f, 0.0f})));
  CHECK_FALSE(Densify({6, {6}, {1.0f}}).defined());
  CHECK_FALSE(Densify({6, {1, 2}, {1.0f}}).defined());
  CHECK(at::equal(Densify({3, {}, {}}), at::zeros({3})));
}

TEST_CASE("ResidualAfter keeps exactly what top-k did not send") {
  const int64_t d = 5000, k = 250;
  const at::Tensor d1 = RandomDelta(d, 10);
  const SparseDelta s1 = MustTopK(d1, k);
  auto r1 = ResidualAfter(d1, s1, at::kCPU);
  REQUIRE(r1.ok());
  CHECK(at::equal(*r1 + Densify(s1), d1));
  CHECK(at::equal(r1->index_select(0, Densify(s1).nonzero().squeeze(1)),
                  at::zeros({k})));
  // Carried into the next round: sent deltas plus the final residual add
  // up to the raw deltas.
  const at::Tensor c2 = RandomDelta(d, 11) + *r1;
  const SparseDelta s2 = MustTopK(c2, k);
  auto r2 = ResidualAfter(c2, s2, at::kCPU);
  REQUIRE(r2.ok());
  CHECK(at::allclose(Densify(s1) + Densify(s2) + *r2,
                     d1 + RandomDelta(d, 11), /*rtol=*/0, /*atol=*/1e-6));
  CHECK_FALSE(ResidualAfter(at::zeros({d + 1}), s2, at::kCPU).ok());
  CHECK_FALSE(ResidualAfter(c2, SparseDelta{d, {5}, {}}, at::kCPU).ok());
}

// The daemon's fp16 + error-feedback pipeline is tested through the real
// DeltaCompressor in delta_compressor_test.cc.

}  // namespace shefl
