// The clipped, fixed-denominator sum of differential privacy
// (common/fed/private_sum.h) by hand: a client's updates to several models
// are clipped together, never each alone; the coefficients come from the
// planned counts; the sum is in client-id order. And the noise's normals
// (common/privacy/gaussian_sampler.h): the extreme draw by hand, and a
// chi-squared check of 200,000 draws' variance.
#include "common/fed/private_sum.h"

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/fed/aggregate.h"
#include "common/privacy/gaussian_sampler.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

ReceivedUpdate Update(int64_t client, Tier tier, std::vector<uint32_t> idx,
                      std::vector<float> val) {
  ReceivedUpdate u;
  u.client_id = client;
  u.tier = tier;
  u.delta.dim = 4;
  u.delta.indices = std::move(idx);
  u.delta.values = std::move(val);
  return u;
}

// Two models of 4 weights: client 3 (HPC) sends (3, 0, 0, 0) to model 0
// and (0, 0, 0, 4) to model 1, joint norm 5; client 1 (LPC) sends 0.3 to
// model 0 only.
std::vector<ModelAggregator> TwoModels() {
  AggregationConfig agg;
  agg.rule = "uniform";
  std::vector<ModelAggregator> aggs;
  for (int m = 0; m < 2; ++m) aggs.emplace_back(agg, CohortShape{2, 1, 1}, 4);
  REQUIRE(aggs[0].Add(Update(3, Tier::kHpc, {0}, {3.0f})).ok());
  REQUIRE(aggs[1].Add(Update(3, Tier::kHpc, {3}, {4.0f})).ok());
  REQUIRE(aggs[0].Add(Update(1, Tier::kLpc, {1}, {0.3f})).ok());
  return aggs;
}

TEST_CASE("a client's updates to every model are clipped together to S") {
  const auto clips = ClipJointly(TwoModels(), 1.0);
  REQUIRE(clips.size() == 2u);
  CHECK(clips.at(3).norm == Approx(5.0));
  CHECK(clips.at(3).factor == Approx(0.2));  // each alone would be 1/3, 1/4
  CHECK(clips.at(1).norm == Approx(0.3));
  CHECK(clips.at(1).factor == 1.0);  // under S: untouched
}

TEST_CASE("random joint updates end at most S after the clip") {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> n(0, 3);
  AggregationConfig agg;
  std::vector<ModelAggregator> aggs;
  for (int m = 0; m < 3; ++m) aggs.emplace_back(agg, CohortShape{3, 4, 4}, 4);
  for (int64_t c = 0; c < 8; ++c)
    for (int m = 0; m < 3; ++m)
      if (c < 4 || m == c % 3)
        REQUIRE(aggs[m].Add(Update(c, c < 4 ? Tier::kHpc : Tier::kLpc, {0, 1, 2, 3},
                                   {n(rng), n(rng), n(rng), n(rng)})).ok());
  const auto clips = ClipJointly(aggs, 2.0);
  for (const auto& [client, c] : clips) {
    double sq = 0;
    for (const ModelAggregator& a : aggs)
      for (const ReceivedUpdate& u : a.updates())
        if (u.client_id == client)
          for (float v : u.delta.values) sq += std::pow(c.factor * v, 2);
    CHECK(std::sqrt(sq) <= 2.0 * (1 + 1e-12));
  }
}

TEST_CASE("the coefficients come from the planned counts") {
  AggregationConfig uniform;
  uniform.rule = "uniform";
  auto u = PlannedCoefficients(uniform, 2, 3);
  CHECK(u[0] == Approx(0.2));
  CHECK(u[1] == Approx(0.2));
  AggregationConfig wa;
  wa.rule = "workload_aware";
  wa.hpc_share = 0.5;
  auto w = PlannedCoefficients(wa, 5, 2);
  CHECK(w[0] == Approx(0.1));   // beta / H
  CHECK(w[1] == Approx(0.25));  // (1 - beta) / L
  CHECK(MaxCoefficient(w, 5, 2) == Approx(0.25));
  // One group planned empty: the other takes all of the step.
  auto only_h = PlannedCoefficients(wa, 4, 0);
  CHECK(only_h[0] == Approx(0.25));
  CHECK(MaxCoefficient(only_h, 4, 0) == Approx(0.25));
  auto only_l = PlannedCoefficients(wa, 0, 2);
  CHECK(only_l[1] == Approx(0.5));
  CHECK(MaxCoefficient(only_l, 0, 2) == Approx(0.5));
}

TEST_CASE("the sum weighs each update by its tier's coefficient and its clip") {
  const auto aggs = TwoModels();
  const auto clips = ClipJointly(aggs, 1.0);
  const std::vector<double> s0 =
      ClippedSum(aggs[0].updates(), {0.5, 0.25}, clips, 4);
  REQUIRE(s0.size() == 4u);
  CHECK(s0[0] == Approx(0.5 * 0.2 * 3));  // HPC, clipped
  CHECK(s0[1] == Approx(0.25 * 0.3));     // LPC, not clipped
  CHECK(s0[2] == 0.0);
  const std::vector<double> s1 =
      ClippedSum(aggs[1].updates(), {0.5, 0.25}, clips, 4);
  CHECK(s1[3] == Approx(0.5 * 0.2 * 4));
}

TEST_CASE("normals from bytes: the largest draw by hand") {
  const std::vector<uint8_t> zeros(16, 0);
  double out[2];
  StandardNormalsFromBytes(zeros.data(), 2, out);
  // u1 = 2^-53, u2 = 0: sqrt(106 ln 2) and 0.
  CHECK(out[0] == Approx(std::sqrt(106 * std::log(2.0))));
  CHECK(out[1] == Approx(0.0).margin(1e-12));
  CHECK(NormalBytesFor(3) == 32u);
}

TEST_CASE("200000 normals from uniform bytes have the unit variance a chi-squared test accepts") {
  const size_t n = 200000;
  std::mt19937_64 rng(11);
  std::vector<uint8_t> bytes(NormalBytesFor(n));
  for (size_t i = 0; i < bytes.size(); i += 8) {
    const uint64_t v = rng();
    for (int b = 0; b < 8; ++b) bytes[i + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  std::vector<double> z(n);
  StandardNormalsFromBytes(bytes.data(), n, z.data());
  double sum = 0, sq = 0;
  size_t beyond = 0;
  for (double v : z) {
    sum += v;
    sq += v * v;
    beyond += std::fabs(v) > 1.959964;
  }
  // sum z^2 ~ chi^2_n: mean n, sd sqrt(2n); five sds either side.
  CHECK(std::fabs(sq - n) < 5 * std::sqrt(2.0 * n));
  CHECK(std::fabs(sum / n) < 5 / std::sqrt(static_cast<double>(n)));
  const double tail = static_cast<double>(beyond) / n;  // 0.05
  CHECK(std::fabs(tail - 0.05) < 5 * std::sqrt(0.05 * 0.95 / n));
}

}  // namespace
}  // namespace shefl
