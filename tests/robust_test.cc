// The robust bounds (common/fed/robust.h) on hand-made rounds: what is
// refused, clipped and trimmed, that honest rounds are left bit-identical,
// and that nothing depends on the order the updates arrived in.
#include "common/fed/robust.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr uint64_t kDim = 64;

// A delta of `k` values around `scale` at distinct indices from `seed`.
SparseDelta Delta(uint64_t seed, float scale, uint64_t k = 16) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> idx(kDim);
  for (uint32_t i = 0; i < kDim; ++i) idx[i] = i;
  std::shuffle(idx.begin(), idx.end(), rng);
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  SparseDelta d;
  d.dim = kDim;
  d.indices = idx;
  std::normal_distribution<float> n(0, 1);
  for (uint64_t i = 0; i < k; ++i) d.values.push_back(scale * n(rng));
  return d;
}

// `members` aggregators; member m gets updates from clients
// m*10 .. m*10+per-1, client c's delta from seed c.
std::vector<ModelAggregator> Round(int members, int per,
                                   const AggregationConfig& agg = {}) {
  std::vector<ModelAggregator> out;
  for (int m = 0; m < members; ++m) {
    out.emplace_back(agg, CohortShape{members, per, 0}, kDim);
    for (int c = m * 10; c < m * 10 + per; ++c)
      REQUIRE(out.back().Add({c, Tier::kHpc, 1, Delta(c, 0.01f)}).ok());
  }
  return out;
}

std::vector<float> Fold(ModelAggregator& agg) {
  std::vector<float> w(kDim, 0.5f);
  REQUIRE(agg.ApplyTo(&w).ok());
  return w;
}

TEST_CASE("a coordinate beyond max_abs or not finite is refused, naming it",
          "[robust]") {
  SparseDelta d = Delta(1, 0.01f);
  CHECK(CheckMagnitude(d, 1e4).ok());
  d.values[3] = 1e38f;
  const absl::Status st = CheckMagnitude(d, 1e4);
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(st.message()),
             Catch::Contains("index " + std::to_string(d.indices[3])));
  CHECK(CheckMagnitude(d, 0).ok());  // no bound: finite is enough
  d.values[3] = std::nanf("");
  CHECK_FALSE(CheckMagnitude(d, 0).ok());
}

TEST_CASE("median of odd, even and empty sets", "[robust]") {
  CHECK(Median({3, 1, 2}) == 2);
  CHECK(Median({4, 1, 3, 2}) == 2.5);
  CHECK(Median({}) == 0);
}

TEST_CASE("an honest round is left bit-identical by the default bounds",
          "[robust]") {
  auto plain = Round(5, 3), bounded = Round(5, 3);
  const RobustCounts c = ApplyRobustBounds(RobustConfig{}, &bounded);
  CHECK(c.refused_norm == 0);
  CHECK(c.clipped_norm == 0);
  CHECK(c.median_norm > 0);
  for (int m = 0; m < 5; ++m) CHECK(Fold(plain[m]) == Fold(bounded[m]));
}

TEST_CASE("a scaled update is left out, a larger than usual one clipped",
          "[robust]") {
  auto aggs = Round(5, 3);
  // Member 0: client 0 sends x100 (and flipped), member 1: client 10 x6.
  auto* u0 = aggs[0].mutable_updates();
  for (float& v : (*u0)[0].delta.values) v *= -100;
  auto* u1 = aggs[1].mutable_updates();
  for (float& v : (*u1)[0].delta.values) v *= 6;
  std::vector<double> before;
  for (auto& a : aggs)
    for (const auto& u : a.updates()) before.push_back(L2Norm(u.delta));
  const double median = Median(before);
  const RobustCounts c = ApplyRobustBounds(RobustConfig{}, &aggs);
  CHECK(c.refused_norm == 1);
  CHECK(c.clipped_norm == 1);
  CHECK(c.median_norm == median);
  CHECK(aggs[0].num_updates() == 2);
  for (const auto& u : aggs[0].updates()) CHECK(u.client_id != 0);
  // Clipped to clip_multiple x median (float rounding aside).
  CHECK(L2Norm(aggs[1].updates()[0].delta) ==
        Approx(RobustConfig{}.clip_multiple * median).epsilon(1e-6));
}

TEST_CASE("an absolute norm bound scales every update above it", "[robust]") {
  auto aggs = Round(2, 3);
  RobustConfig cfg;
  cfg.clip_multiple = 0;
  cfg.refuse_multiple = 0;
  cfg.norm_bound = 1e-3;
  const RobustCounts c = ApplyRobustBounds(cfg, &aggs);
  CHECK(c.clipped_norm == 6);
  for (auto& a : aggs)
    for (const auto& u : a.updates())
      CHECK(L2Norm(u.delta) == Approx(1e-3).epsilon(1e-6));
}

TEST_CASE("trimming bounds each coordinate by the senders' order statistics",
          "[robust]") {
  // Five senders at coordinate 7: 1, 2, 3, 4, 100; trim 0.2 drops one a
  // side, so 1 -> 2 and 100 -> 4. Coordinate 9: only 50 sent by one, the
  // other four count as 0, so 50 -> 0.
  std::vector<ReceivedUpdate> ups;
  const float vals[] = {1, 2, 3, 4, 100};
  for (int s = 0; s < 5; ++s) {
    SparseDelta d;
    d.dim = kDim;
    d.indices = {7};
    d.values = {vals[s]};
    if (s == 4) {
      d.indices.push_back(9);
      d.values.push_back(50);
    }
    ups.push_back({s, Tier::kHpc, 1, d});
  }
  CHECK(TrimCoordinates(0.2, &ups) == 3);
  CHECK(ups[0].delta.values[0] == 2);
  CHECK(ups[2].delta.values[0] == 3);
  CHECK(ups[4].delta.values[0] == 4);
  CHECK(ups[4].delta.values[1] == 0);
  CHECK(TrimCoordinates(0.1, &ups) == 0);  // floor(0.5) = 0: nothing
}

TEST_CASE("bounds and trimming do not depend on the arrival order",
          "[robust]") {
  RobustConfig cfg;
  cfg.trim = 0.34;
  auto a = Round(3, 3), b = Round(3, 3);
  for (auto* r : {&a, &b}) {
    auto* u = (*r)[2].mutable_updates();
    for (float& v : (*u)[1].delta.values) v *= 7;  // clipped, not refused
  }
  for (auto& agg : b) {
    auto* u = agg.mutable_updates();
    std::reverse(u->begin(), u->end());
  }
  const RobustCounts ca = ApplyRobustBounds(cfg, &a);
  const RobustCounts cb = ApplyRobustBounds(cfg, &b);
  CHECK(ca.clipped_norm == 1);
  CHECK(ca.trimmed_values == cb.trimmed_values);
  CHECK(ca.trimmed_values > 0);
  for (int m = 0; m < 3; ++m) CHECK(Fold(a[m]) == Fold(b[m]));
}

}  // namespace
}  // namespace shefl
