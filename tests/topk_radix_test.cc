// The sampled radix select (RadixTopK) against the two-pass radix select
// it replaced and a full sort: the same indices and bit-identical values on
// random data, ties at the k-th magnitude, zeros, signed zeros, subnormals,
// k = 0, k = d; with the AVX2 pass and with the scalar one; NaN and Inf
// refused on every path. Torch-free; TopK against the tensor-ops reference
// is in compress_test.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/sparse/radix_topk.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Kinds of data: what makes a threshold hard to find.
enum class Kind { kGaussian, kCoarse, kMostlyZero, kAllEqual, kSpecials };

std::vector<float> Data(uint64_t d, Kind kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> x(d);
  for (float& v : x) v = normal(rng);
  switch (kind) {
    case Kind::kGaussian:
      break;
    case Kind::kCoarse:  // few distinct magnitudes: long runs of ties
      for (float& v : x) v = std::round(v * 2) / 2;
      break;
    case Kind::kMostlyZero:  // 90% zeros of both signs
      for (uint64_t i = 0; i < d; ++i)
        if (rng() % 10 != 0) x[i] = (rng() & 1) ? 0.0f : -0.0f;
      break;
    case Kind::kAllEqual:
      for (uint64_t i = 0; i < d; ++i) x[i] = (i & 1) ? 0.75f : -0.75f;
      break;
    case Kind::kSpecials:  // subnormals and signed zeros among the normals
      for (uint64_t i = 0; i < d; i += 3) {
        const float tiny = std::numeric_limits<float>::denorm_min() *
                           static_cast<float>(1 + rng() % 1000);
        x[i] = (rng() % 4 == 0) ? ((rng() & 1) ? 0.0f : -0.0f)
                                : ((rng() & 1) ? tiny : -tiny);
      }
      break;
  }
  return x;
}

const char* Name(Kind kind) {
  switch (kind) {
    case Kind::kGaussian: return "gaussian";
    case Kind::kCoarse: return "coarse";
    case Kind::kMostlyZero: return "mostly zero";
    case Kind::kAllEqual: return "all equal";
    case Kind::kSpecials: return "subnormals and signed zeros";
  }
  return "?";
}

// The k largest |x| with ties to the lower index, ascending: a full sort.
std::vector<uint32_t> SortTopK(const std::vector<float>& x, uint64_t k) {
  std::vector<uint32_t> order(x.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::fabs(x[a]) > std::fabs(x[b]);
  });
  order.resize(std::min<uint64_t>(k, x.size()));
  std::sort(order.begin(), order.end());
  return order;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

SparseDelta Sampled(const std::vector<float>& x, uint64_t k) {
  SparseDelta s;
  REQUIRE(RadixTopK(x.data(), x.size(), k, &s));
  return s;
}

SparseDelta TwoPass(const std::vector<float>& x, uint64_t k) {
  SparseDelta s;
  REQUIRE(RadixTopKTwoPass(x.data(), x.size(), k, &s));
  return s;
}

// Restores the AVX2 pass however a test case ends.
struct ScalarOnly {
  ScalarOnly() { SetRadixTopKSimd(false); }
  ~ScalarOnly() { SetRadixTopKSimd(true); }
};

void CheckAgainstTwoPass(bool scalar) {
  int checked = 0;
  for (uint64_t d : {40000u, 582026u, (1u << 20) + 3}) {
    for (Kind kind : {Kind::kGaussian, Kind::kCoarse, Kind::kMostlyZero,
                      Kind::kAllEqual, Kind::kSpecials}) {
      const std::vector<float> x = Data(d, kind, d + static_cast<int>(kind));
      for (double density : {1e-5, 0.001, 0.02, 0.1, 0.5, 0.999}) {
        const uint64_t k = std::max<uint64_t>(1, std::ceil(density * d));
        INFO("d " << d << " " << Name(kind) << " k " << k << " scalar "
                  << scalar);
        const SparseDelta got = Sampled(x, k);
        const SparseDelta want = TwoPass(x, k);
        CHECK(got.dim == d);
        REQUIRE(got.indices.size() == k);
        CHECK(got.indices == want.indices);
        CHECK(SameBits(got.values, want.values));
        if (d == 40000) CHECK(got.indices == SortTopK(x, k));
        ++checked;
      }
    }
  }
  CHECK(checked == 90);
}

TEST_CASE("sampled radix top-k equals the two-pass select and a full sort") {
  CheckAgainstTwoPass(/*scalar=*/false);
}

TEST_CASE("the scalar pass gives what the AVX2 pass gives") {
  ScalarOnly scalar;
  CheckAgainstTwoPass(/*scalar=*/true);
}

TEST_CASE("ties at the k-th magnitude go to the lower indices") {
  // 1,000 entries of magnitude 5 at random places, every other entry of
  // magnitude 1 (either sign): k = 1,300 takes the 5s and the first 300 1s.
  const uint64_t d = 100000;
  std::mt19937_64 rng(7);
  std::vector<float> x(d);
  for (uint64_t i = 0; i < d; ++i) x[i] = (rng() & 1) ? 1.0f : -1.0f;
  std::vector<uint32_t> big(d);
  std::iota(big.begin(), big.end(), 0u);
  std::shuffle(big.begin(), big.end(), rng);
  big.resize(1000);
  for (uint32_t i : big) x[i] = -5.0f;
  std::vector<uint32_t> want = big;
  for (uint32_t i = 0, ones = 0; ones < 300; ++i)
    if (x[i] != -5.0f) want.push_back(i), ++ones;
  std::sort(want.begin(), want.end());
  for (bool scalar : {false, true}) {
    SetRadixTopKSimd(!scalar);
    const SparseDelta s = Sampled(x, 1300);
    SetRadixTopKSimd(true);
    CHECK(s.indices == want);
    for (size_t j = 0; j < s.nnz(); ++j)
      REQUIRE(s.values[j] == x[s.indices[j]]);
  }
}

TEST_CASE("k = 0 and k >= d need no selection") {
  for (uint64_t d : {0u, 5u, 70000u}) {
    const std::vector<float> x = Data(d, Kind::kSpecials, 3);
    SparseDelta s = Sampled(x, 0);
    CHECK(s.dim == d);
    CHECK(s.nnz() == 0u);
    for (uint64_t k : {d, d + 1, 2 * d + 7}) {
      s = Sampled(x, k);
      CHECK(s.dim == d);
      REQUIRE(s.indices.size() == d);
      for (uint64_t i = 0; i < d; ++i) REQUIRE(s.indices[i] == i);
      CHECK(SameBits(s.values, x));  // -0.0 stays -0.0
    }
  }
}

TEST_CASE("NaN and Inf are refused on every path and leave the output") {
  for (uint64_t d : {1000u, 100000u}) {
    for (float bad : {std::nanf(""), INFINITY, -INFINITY}) {
      for (uint64_t at : {uint64_t{0}, d / 3, d - 1}) {
        std::vector<float> x = Data(d, Kind::kGaussian, at);
        x[at] = bad;
        for (uint64_t k : {uint64_t{0}, uint64_t{1}, d / 10, d - 1, d}) {
          for (bool scalar : {false, true}) {
            INFO("d " << d << " bad " << bad << " at " << at << " k " << k
                      << " scalar " << scalar);
            SparseDelta s;
            s.dim = 12345;
            SetRadixTopKSimd(!scalar);
            const bool ok = RadixTopK(x.data(), d, k, &s);
            SetRadixTopKSimd(true);
            CHECK_FALSE(ok);
            CHECK(s.dim == 12345u);
          }
          SparseDelta s;
          CHECK_FALSE(RadixTopKTwoPass(x.data(), d, std::max<uint64_t>(k, 1),
                                       &s));
        }
      }
    }
  }
}

}  // namespace
}  // namespace shefl
