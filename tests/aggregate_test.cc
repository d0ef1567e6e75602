#include "common/aggregate.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <random>

#include "common/rng.h"

namespace shefl {
namespace {

SparseDelta RandomSparse(uint64_t dim, uint64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> all(dim);
  for (uint32_t i = 0; i < dim; ++i) all[i] = i;
  Shuffle(all, rng);
  all.resize(k);
  std::sort(all.begin(), all.end());
  SparseDelta d;
  d.dim = dim;
  d.indices = all;
  std::normal_distribution<float> n(0, 1);
  for (size_t i = 0; i < k; ++i) d.values.push_back(n(rng));
  return d;
}

AggregationConfig Rule(const char* rule) {
  AggregationConfig a;
  a.rule = rule;
  return a;
}

std::vector<float> Run(const AggregationConfig& cfg, const CohortShape& shape,
                       const std::vector<ReceivedUpdate>& ups,
                       std::vector<float> w) {
  ModelAggregator agg(cfg, shape, w.size());
  for (const auto& u : ups) REQUIRE(agg.Add(u).ok());
  REQUIRE(agg.ApplyTo(&w).ok());
  return w;
}

// The paper's setting: M = C_h = C_l = 5, latin, so model m receives the
// 5 HPC updates and exactly one LPC update.
std::vector<ReceivedUpdate> PaperRoundForOneModel(uint64_t dim) {
  std::vector<ReceivedUpdate> ups;
  for (int c = 0; c < 6; ++c) {
    ReceivedUpdate u;
    u.client_id = c * 7 + 1;
    u.tier = c < 5 ? Tier::kHpc : Tier::kLpc;
    u.delta = RandomSparse(dim, dim / 10, 100 + c);
    ups.push_back(u);
  }
  return ups;
}

TEST_CASE("paper and workload_aware agree in the paper's setting") {
  const uint64_t dim = 5000;
  const CohortShape shape{5, 5, 5};
  auto ups = PaperRoundForOneModel(dim);
  std::vector<float> w0(dim, 0.25f);
  auto paper = Run(Rule("paper"), shape, ups, w0);
  auto wa = Run(Rule("workload_aware"), shape, ups, w0);
  double max_diff = 0;
  for (uint64_t j = 0; j < dim; ++j)
    max_diff = std::max(max_diff, std::abs(double(paper[j]) - wa[j]));
  CHECK(max_diff < 1e-6);
  CHECK(paper != w0);  // something actually moved
  PaperCoefficients p = PaperEq2(shape);
  CHECK(p.a_h == Approx(0.6));
  CHECK(p.a_l == Approx(3.0));
}

TEST_CASE("aggregation is bit-identical under any arrival order") {
  const uint64_t dim = 3000;
  auto ups = PaperRoundForOneModel(dim);
  for (const char* rule : {"uniform", "workload_aware", "paper"}) {
    std::vector<float> w0(dim, -0.5f);
    auto ref = Run(Rule(rule), {5, 5, 5}, ups, w0);
    auto perm = ups;
    std::mt19937_64 rng(9);
    for (int trial = 0; trial < 20; ++trial) {
      Shuffle(perm, rng);
      auto got = Run(Rule(rule), {5, 5, 5}, perm, w0);
      INFO(rule << " trial " << trial);
      REQUIRE(std::memcmp(got.data(), ref.data(), dim * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("uniform is the plain mean, workload_aware weighs the group means") {
  // Two HPC updates on index 0, one LPC update on index 0.
  auto one = [](int64_t id, Tier t, float v) {
    ReceivedUpdate u;
    u.client_id = id;
    u.tier = t;
    u.delta.dim = 2;
    u.delta.indices = {0};
    u.delta.values = {v};
    return u;
  };
  std::vector<ReceivedUpdate> ups = {one(1, Tier::kHpc, 1.0f),
                                     one(2, Tier::kHpc, 3.0f),
                                     one(3, Tier::kLpc, 8.0f)};
  auto uni = Run(Rule("uniform"), {1, 2, 1}, ups, {0, 0});
  CHECK(uni[0] == Approx(4.0));  // (1 + 3 + 8) / 3
  CHECK(uni[1] == 0.0f);
  auto wa = Run(Rule("workload_aware"), {1, 2, 1}, ups, {0, 0});
  CHECK(wa[0] == Approx(0.5 * 2.0 + 0.5 * 8.0));
  AggregationConfig beta = Rule("workload_aware");
  beta.hpc_share = 0.8;
  CHECK(Run(beta, {1, 2, 1}, ups, {0, 0})[0] == Approx(0.8 * 2 + 0.2 * 8));
  // Without LPC updates beta is 1: the HPC mean alone.
  std::vector<ReceivedUpdate> hpc_only(ups.begin(), ups.begin() + 2);
  CHECK(Run(beta, {1, 2, 1}, hpc_only, {0, 0})[0] == Approx(2.0));
  // Sample weights.
  AggregationConfig bys = Rule("uniform");
  bys.weight_by_samples = true;
  ups[0].num_samples = 3;  // (3*1 + 3 + 8) / 5
  CHECK(Run(bys, {1, 2, 1}, ups, {0, 0})[0] == Approx(14.0 / 5));
  // Server learning rate.
  AggregationConfig eta = Rule("uniform");
  eta.server_lr = 0.5;
  CHECK(Run(eta, {1, 2, 1}, ups, {1, 0})[0] == Approx(1 + 0.5 * 4.0));
}

TEST_CASE("a refused update never touches the model") {
  const uint64_t dim = 100;
  ModelAggregator agg(Rule("uniform"), {1, 0, 2}, dim);
  ReceivedUpdate good;
  good.client_id = 1;
  good.delta = RandomSparse(dim, 10, 1);
  REQUIRE(agg.Add(good).ok());

  ReceivedUpdate dup = good;
  CHECK(agg.Add(dup).code() == absl::StatusCode::kAlreadyExists);
  ReceivedUpdate bad = good;
  bad.client_id = 2;
  bad.delta.indices.back() = dim;  // out of range
  auto st = agg.Add(bad);
  CHECK_THAT(std::string(st.message()), Catch::Contains("out of range"));
  bad = good;
  bad.client_id = 3;
  bad.delta.values[2] = std::nanf("");
  CHECK_THAT(std::string(agg.Add(bad).message()), Catch::Contains("NaN"));
  bad = good;
  bad.client_id = 4;
  std::swap(bad.delta.indices[0], bad.delta.indices[1]);
  CHECK_THAT(std::string(agg.Add(bad).message()), Catch::Contains("ascending"));
  bad = good;
  bad.client_id = 5;
  bad.delta.dim = dim + 1;
  CHECK_FALSE(agg.Add(bad).ok());
  CHECK(agg.num_updates() == 1u);

  // The result equals aggregating the good update alone.
  std::vector<float> w(dim, 0), alone(dim, 0);
  REQUIRE(agg.ApplyTo(&w).ok());
  ModelAggregator only(Rule("uniform"), {1, 0, 2}, dim);
  REQUIRE(only.Add(good).ok());
  REQUIRE(only.ApplyTo(&alone).ok());
  CHECK(w == alone);
}

}  // namespace
}  // namespace shefl
