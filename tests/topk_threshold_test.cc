// The sample-threshold top-k (common/sparse/topk_threshold.h, the algorithm of
// the CUDA top-k) against the exact TopK of common/learn/compress.h: the same
// indices and values on random and adversarial inputs, whatever the sample
// saw.
#include "common/sparse/topk_threshold.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/fed/schedule.h"
#include "common/learn/compress.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

at::Tensor Randn(int64_t d, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn({d}, gen, at::kFloat);
}

// ThresholdTopK equals TopK on x for k; returns the stats.
ThresholdTopKStats CheckParity(const at::Tensor& x, int64_t k) {
  const at::Tensor c = x.contiguous();
  INFO("d " << c.numel() << " k " << k);
  auto exact = TopK(c, k);
  REQUIRE(exact.ok());
  SparseDelta ours;
  ThresholdTopKStats st;
  REQUIRE(ThresholdTopK(c.data_ptr<float>(), c.numel(),
                        static_cast<uint64_t>(std::max<int64_t>(k, 0)), &ours,
                        &st));
  CHECK(ours.dim == exact->dim);
  REQUIRE(ours.nnz() == exact->nnz());
  CHECK(ours.indices == exact->indices);
  // Bitwise: -0 and +0 must come out as they were.
  CHECK(std::memcmp(ours.values.data(), exact->values.data(),
                    ours.nnz() * sizeof(float)) == 0);
  return st;
}

std::vector<int64_t> Ks(int64_t d) {
  return {0, 1, 2, d / 1000, d / 100, KForDensity(d, 0.1), d / 2, d - 1, d,
          d + 5};
}

}  // namespace

TEST_CASE("the sample plan: positions spread, ranks deepen to t = 0") {
  for (uint64_t d : {1ull, 7ull, 4096ull, 4097ull, 582026ull, 100000000ull}) {
    const uint64_t s = ThresholdSampleSize(d);
    INFO("d " << d << " s " << s);
    CHECK(s >= 1);
    CHECK(s <= d);
    CHECK(s <= 65536);
    uint64_t prev = 0;
    for (uint64_t j = 0; j < s; ++j) {
      const uint64_t p = ThresholdSamplePosition(j, s, d);
      REQUIRE(p < d);
      if (j > 0) REQUIRE(p > prev);
      prev = p;
    }
    for (uint64_t k : {uint64_t{1}, d / 10 + 1, d}) {
      uint64_t last = 0;
      int a = 0;
      for (; a < 64 && ThresholdRank(k, d, s, a) < s; ++a) {
        CHECK(ThresholdRank(k, d, s, a) >= last);
        last = ThresholdRank(k, d, s, a);
      }
      CHECK(a < 64);  // reaches t = 0 in a few attempts
    }
  }
  CHECK(ThresholdIndexBits(1) == 1);
  CHECK(ThresholdIndexBits(1024) == 10);
  CHECK(ThresholdIndexBits(1025) == 11);
  CHECK(ThresholdIndexBits(uint64_t{1} << 32) == 32);
  for (int b : {1, 10, 24, 32}) {
    const uint32_t last = static_cast<uint32_t>((uint64_t{1} << b) - 1);
    CHECK(ThresholdKeyIndex(ThresholdKey(5, 0, b), b) == 0);
    CHECK(ThresholdKeyIndex(ThresholdKey(0x7f7fffff, last, b), b) == last);
    // Larger magnitude first, then lower index.
    CHECK(ThresholdKey(6, last, b) > ThresholdKey(5, 0, b));
    CHECK(ThresholdKey(5, 0, b) > ThresholdKey(5, 1, b));
    CHECK(ThresholdKey(0x7fffffff, 0, b) >> (31 + b) == 0);  // 31 + b bits
  }
}

TEST_CASE("threshold top-k equals TopK on random deltas") {
  for (int64_t d : {1, 2, 3, 7, 100, 4096, 4097, 5000, 65537, 300001}) {
    for (int64_t k : Ks(d)) {
      at::Tensor x = Randn(d, 7 * d + k);
      CheckParity(x, k);
      CheckParity((x * 4).round() / 4, k);  // coarse: ties at the k-th
    }
  }
}

TEST_CASE("threshold top-k on the FMNIST CNN size at density 0.1") {
  const int64_t d = 582026, k = KForDensity(d, 0.1);
  REQUIRE(k == 58203);
  const ThresholdTopKStats st = CheckParity(Randn(d, 11), k);
  CHECK(st.attempts == 1);  // the sample's margin holds on N(0, 1)
  CHECK(st.overflows == 0);
  CHECK(st.candidates >= static_cast<uint64_t>(k));
  CHECK(st.candidates < static_cast<uint64_t>(k) * 3 / 2);  // few
  CheckParity(Randn(d, 12), KForDensity(d, 0.01));
}

TEST_CASE("threshold top-k with ties everywhere and many zeros") {
  const int64_t d = 100000;
  // Equal magnitudes, alternating signs: t is that magnitude, every entry
  // a candidate, the buffer overflows; the first k indices win.
  at::Tensor same = at::full({d}, 0.5f);
  same.index_put_({at::arange(1, d, 2)}, -0.5f);
  for (int64_t k : std::vector<int64_t>{1, 1000, KForDensity(d, 0.1)}) {
    const ThresholdTopKStats st = CheckParity(same, k);
    CHECK(st.overflows == 1);
  }
  CheckParity(same, d - 1);  // t = 0 at once: room for all, no overflow
  CheckParity(at::zeros({d}), 10);
  // 95% zeros (some -0): k inside the nonzeros and k reaching into the zeros.
  at::Tensor sparse = Randn(d, 3) * (at::rand({d}) < 0.05).to(at::kFloat);
  sparse.slice(0, 0, 100).fill_(-0.0f);
  const int64_t nonzero = sparse.ne(0).sum().item<int64_t>();
  for (int64_t k : {nonzero / 2, nonzero, nonzero + 1, nonzero + 5000})
    CheckParity(sparse, k);
  // Positive and negative of equal magnitudes interleaved, subnormals.
  at::Tensor pm = at::arange(d, at::kFloat).remainder(7) - 3;  // -3..3
  pm.slice(0, 0, 50).fill_(1e-40f);
  pm.slice(0, 50, 100).fill_(-1e-40f);
  for (int64_t k : std::vector<int64_t>{1, 7, d / 7, 2 * d / 7 + 3, d - 10})
    CheckParity(pm, k);
}

TEST_CASE("threshold top-k on heavy tails") {
  const int64_t d = 200003;
  at::Generator gen = at::detail::createCPUGenerator(5);
  // Ratio of normals (Cauchy) and exp(5 N): magnitudes over many octaves.
  const at::Tensor cauchy =
      at::randn({d}, gen, at::kFloat) / at::randn({d}, gen, at::kFloat);
  const at::Tensor lognormal =
      at::exp(5 * at::randn({d}, gen, at::kFloat)) *
      at::randn({d}, gen, at::kFloat).sign();
  for (int64_t k : {1, 20, 2000, 20001, 100000}) {
    CheckParity(cauchy, k);
    CheckParity(lognormal, k);
  }
}

TEST_CASE("threshold top-k when the sample misleads") {
  const int64_t d = 1000000;
  const uint64_t s = ThresholdSampleSize(d);
  std::vector<int64_t> sampled(s);
  for (uint64_t j = 0; j < s; ++j)
    sampled[j] = static_cast<int64_t>(ThresholdSamplePosition(j, s, d));
  const at::Tensor pos = at::tensor(sampled, at::kLong);
  // The sample holds the only large values: t lands too high, the first
  // attempt finds fewer than k candidates and the next goes deeper.
  at::Tensor high = Randn(d, 21) * 1e-3f;
  high.index_put_({pos}, at::arange(1, static_cast<int64_t>(s) + 1, at::kFloat));
  const ThresholdTopKStats st = CheckParity(high, 3 * static_cast<int64_t>(s));
  CHECK(st.attempts >= 2);
  CheckParity(high, static_cast<int64_t>(s) + 1);
  // The sample misses the tail: the large values sit between sample
  // positions, so t is low and the candidates many.
  at::Tensor low = Randn(d, 22) * 1e-3f;
  low.index_put_({pos + 1}, 1000.0f);
  low.index_put_({pos}, 0.0f);
  CheckParity(low, static_cast<int64_t>(s) / 2);
  CheckParity(low, KForDensity(d, 0.1));
}

TEST_CASE("threshold top-k refuses NaN and Inf, sampled or not") {
  const int64_t d = 50000;
  const uint64_t s = ThresholdSampleSize(d);
  const int64_t sampled = static_cast<int64_t>(ThresholdSamplePosition(3, s, d));
  for (int64_t at_index : {sampled, sampled + 1, d - 1}) {
    for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
      at::Tensor x = Randn(d, 31);
      x[at_index] = bad;
      for (uint64_t k : {uint64_t{0}, uint64_t{1}, uint64_t{5000},
                         static_cast<uint64_t>(d)}) {
        INFO("index " << at_index << " value " << bad << " k " << k);
        SparseDelta out;
        out.dim = 77;  // left alone on refusal
        CHECK_FALSE(ThresholdTopK(x.data_ptr<float>(), d, k, &out));
        CHECK(out.dim == 77);
      }
    }
  }
}

}  // namespace shefl
