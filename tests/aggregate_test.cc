#include "common/fed/aggregate.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "common/core/rng.h"

#include <catch2/catch.hpp>

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

TEST_CASE("paper_per_model equals workload_aware in the paper's setting") {
  const uint64_t dim = 5000;
  const CohortShape shape{5, 5, 5};
  auto ups = PaperRoundForOneModel(dim);
  std::vector<float> w0(dim, 0.25f);
  auto per_model = Run(Rule("paper_per_model"), shape, ups, w0);
  auto wa = Run(Rule("workload_aware"), shape, ups, w0);
  auto paper = Run(Rule("paper"), shape, ups, w0);
  double max_diff = 0, max_diff_paper = 0;
  for (uint64_t j = 0; j < dim; ++j) {
    max_diff = std::max(max_diff, std::abs(double(per_model[j]) - wa[j]));
    max_diff_paper =
        std::max(max_diff_paper, std::abs(double(per_model[j]) - paper[j]));
  }
  CHECK(max_diff < 1e-6);
  CHECK(max_diff_paper < 1e-6);
  CHECK(per_model != w0);
  // 5 HPC updates and one LPC update: the paper's own coefficients.
  const PaperCoefficients p = PaperPerModel(5, 1);
  CHECK(p.a_h == Approx(0.6));
  CHECK(p.a_l == Approx(3.0));
}

// One model of the paper's setting (M = C_h = C_l = 5) by hand, dim 3:
// HPC clients 1-5 send 1..5 at index 0 (D_H = 3 there) and client 1 also
// 10 at index 1 (D_H = 2); LPC client 7 sends 8 at index 0 and 4 at 2,
// LPC client 9 (a second LPC update, as a shuffle assignment can give)
// sends 2 at index 0.
std::vector<ReceivedUpdate> HandRound(bool lpc7, bool lpc9) {
  auto make = [](int64_t id, Tier t, std::vector<uint32_t> idx,
                 std::vector<float> val) {
    ReceivedUpdate u;
    u.client_id = id;
    u.tier = t;
    u.num_samples = 10.0 * id;  // ignored by both paper rules
    u.delta.dim = 3;
    u.delta.indices = std::move(idx);
    u.delta.values = std::move(val);
    return u;
  };
  std::vector<ReceivedUpdate> ups;
  ups.push_back(make(1, Tier::kHpc, {0, 1}, {1, 10}));
  for (int c = 2; c <= 5; ++c)
    ups.push_back(make(c, Tier::kHpc, {0}, {static_cast<float>(c)}));
  if (lpc7) ups.push_back(make(7, Tier::kLpc, {0, 2}, {8, 4}));
  if (lpc9) ups.push_back(make(9, Tier::kLpc, {0}, {2}));
  return ups;
}

TEST_CASE("paper_per_model by hand: a missing or extra LPC update") {
  const CohortShape shape{5, 5, 5};
  AggregationConfig per_model = Rule("paper_per_model");
  per_model.weight_by_samples = true;  // no effect on the paper rules
  AggregationConfig paper = Rule("paper");
  paper.weight_by_samples = true;
  const std::vector<float> w0 = {0, 0, 0};

  // All planned updates: a_h = 0.6, a_l = 3 over 6 updates for both:
  // (D_H + D_L) / 2 = (3 + 8) / 2 at index 0, 2 / 2 at 1, 4 / 2 at 2.
  for (const auto& cfg : {per_model, paper}) {
    auto w = Run(cfg, shape, HandRound(true, false), w0);
    CHECK(w[0] == Approx(5.5));
    CHECK(w[1] == Approx(1.0));
    CHECK(w[2] == Approx(2.0));
  }

  // The LPC update missing. paper keeps a_h = 0.6 over 5 updates: 0.6 D_H.
  // paper_per_model has H = 5, L = 0: a_h = 1, the step is D_H.
  auto w = Run(paper, shape, HandRound(false, false), w0);
  CHECK(w[0] == Approx(0.6 * 3));
  CHECK(w[1] == Approx(0.6 * 2));
  w = Run(per_model, shape, HandRound(false, false), w0);
  CHECK(w[0] == Approx(3.0));
  CHECK(w[1] == Approx(2.0));
  CHECK(w[2] == 0.0f);
  CHECK(PaperPerModel(5, 0).a_h == 1.0);
  CHECK(PaperPerModel(0, 3).a_l == 1.0);

  // Two LPC updates (D_L = 5 at index 0, 2 at index 2). paper: 0.6 / 7 per
  // HPC delta and 3 / 7 per LPC delta, (3 D_H + 6 D_L) / 7. paper_per_model:
  // H = 5, L = 2, a_h = 7 / 10, a_l = 7 / 4 over 7: (D_H + D_L) / 2.
  w = Run(paper, shape, HandRound(true, true), w0);
  CHECK(w[0] == Approx((3 * 3.0 + 6 * 5.0) / 7));
  CHECK(w[2] == Approx(6 * 2.0 / 7));
  w = Run(per_model, shape, HandRound(true, true), w0);
  CHECK(w[0] == Approx((3.0 + 5.0) / 2));
  CHECK(w[1] == Approx(2.0 / 2));
  CHECK(w[2] == Approx(2.0 / 2));
  CHECK(PaperPerModel(5, 2).a_h == Approx(0.7));
  CHECK(PaperPerModel(5, 2).a_l == Approx(1.75));
}

TEST_CASE("the tiled fold equals a dense accumulator bit for bit") {
  // Across several 32768-weight tiles, with entries on both ends and at
  // tile edges, updates overlapping, one of them empty.
  const uint64_t dim = 3 * 32768 + 5;
  std::vector<ReceivedUpdate> ups;
  for (int c = 0; c < 7; ++c) {
    ReceivedUpdate u;
    u.client_id = 100 - 3 * c;  // arrival order differs from id order
    u.delta = c == 3 ? SparseDelta{dim, {}, {}}
                     : RandomSparse(dim, dim / (2 + c), 50 + c);
    if (c == 0) {  // the first and last weights, and tile edges
      u.delta = RandomSparse(dim, 0, 1);
      u.delta.indices = {0, 32767, 32768, 65535, 65536, dim - 1};
      u.delta.values = {1.5f, -2.0f, 3.25f, 1e-3f, -7.0f, 0.125f};
    }
    ups.push_back(u);
  }
  std::mt19937_64 rng(4);
  std::vector<float> w0(dim);
  std::normal_distribution<float> n(0, 1);
  for (float& v : w0) v = n(rng);
  AggregationConfig cfg = Rule("uniform");
  cfg.server_lr = 0.7;
  const auto got = Run(cfg, {1, 0, 7}, ups, w0);

  // The reference: ids ascending, coefficient eta / 7 each, one dense
  // double accumulator, one rounding.
  auto sorted = ups;
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.client_id < b.client_id; });
  std::vector<double> step(dim, 0.0);
  const double c = 0.7 * (1.0 / 7) * 1.0;
  for (const auto& u : sorted)
    for (size_t i = 0; i < u.delta.nnz(); ++i)
      step[u.delta.indices[i]] += c * u.delta.values[i];
  std::vector<float> want = w0;
  for (uint64_t j = 0; j < dim; ++j)
    if (step[j] != 0) want[j] = static_cast<float>(want[j] + step[j]);
  REQUIRE(std::memcmp(got.data(), want.data(), dim * sizeof(float)) == 0);
  CHECK(got[dim - 1] != w0[dim - 1]);
}

TEST_CASE("aggregation is bit-identical under any arrival order") {
  const uint64_t dim = 3000;
  auto ups = PaperRoundForOneModel(dim);
  for (const char* rule :
       {"uniform", "workload_aware", "paper", "paper_per_model"}) {
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

namespace shefl {
namespace {

AggregationConfig FixedPoint(const char* rule) {
  AggregationConfig a = Rule(rule);
  a.reduction = "fixed_point";
  return a;
}

// C updates of one model from HPC and LPC clients with unequal sample
// counts, as a round of many small clients sends them.
std::vector<ReceivedUpdate> ManyClients(uint64_t dim, int n) {
  std::vector<ReceivedUpdate> ups;
  for (int c = 0; c < n; ++c) {
    ReceivedUpdate u;
    u.client_id = 1000 + 13 * c;
    u.tier = c % 3 == 0 ? Tier::kHpc : Tier::kLpc;
    u.num_samples = 1 + c % 17;
    u.delta = RandomSparse(dim, dim / 8, 7000 + c);
    for (float& v : u.delta.values) v *= 1e-2f;
    ups.push_back(u);
  }
  return ups;
}

TEST_CASE("fixed_point is bit-identical under any arrival order") {
  const uint64_t dim = 4000;
  const auto ups = ManyClients(dim, 60);
  for (const char* rule :
       {"uniform", "workload_aware", "paper", "paper_per_model"}) {
    for (bool by_samples : {false, true}) {
      AggregationConfig cfg = FixedPoint(rule);
      cfg.weight_by_samples = by_samples;
      std::vector<float> w0(dim, 0.25f);
      const auto ref = Run(cfg, {5, 20, 40}, ups, w0);
      CHECK(ref != w0);
      auto perm = ups;
      std::mt19937_64 rng(11);
      for (int trial = 0; trial < 10; ++trial) {
        Shuffle(perm, rng);
        INFO(rule << " by_samples " << by_samples << " trial " << trial);
        const auto got = Run(cfg, {5, 20, 40}, perm, w0);
        REQUIRE(std::memcmp(got.data(), ref.data(), dim * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("fixed_point keeps no update and equals client_order within one ulp") {
  const uint64_t dim = 20000;
  const auto ups = ManyClients(dim, 200);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> n(0, 0.1f);
  std::vector<float> w0(dim);
  for (float& v : w0) v = n(rng);
  for (const char* rule : {"uniform", "workload_aware", "paper_per_model"}) {
    AggregationConfig cfg = Rule(rule);
    cfg.weight_by_samples = true;
    cfg.server_lr = 0.9;
    AggregationConfig fp = cfg;
    fp.reduction = "fixed_point";
    ModelAggregator streamed(fp, {5, 67, 133}, dim);
    for (const auto& u : ups) REQUIRE(streamed.Add(u).ok());
    CHECK(streamed.num_updates() == ups.size());
    CHECK(streamed.updates().empty());  // nothing buffered
    CHECK(streamed.streamed_norms().size() == ups.size());
    std::vector<float> got = w0;
    REQUIRE(streamed.ApplyTo(&got).ok());
    const auto want = Run(cfg, {5, 67, 133}, ups, w0);
    int64_t differ = 0, moved = 0;
    for (uint64_t j = 0; j < dim; ++j) {
      moved += want[j] != w0[j];
      if (got[j] == want[j]) continue;
      ++differ;
      // One float step apart at most: both round nearly the same sum.
      INFO(rule << " weight " << j << ": " << got[j] << " vs " << want[j]);
      REQUIRE(std::nextafter(want[j], got[j]) == got[j]);
    }
    // Most weights agree to the bit; a few sit near a rounding boundary.
    INFO(rule << ": " << differ << " of " << moved << " weights differ");
    CHECK(moved > static_cast<int64_t>(dim) / 2);
    CHECK(differ * 100 < moved);
  }
}

TEST_CASE("fixed_point sums cancel exactly and refuse terms beyond range") {
  const uint64_t dim = 8;
  ModelAggregator agg(FixedPoint("uniform"), {1, 0, 3}, dim);
  auto one = [dim](int64_t id, std::vector<uint32_t> idx,
                   std::vector<float> val) {
    ReceivedUpdate u;
    u.client_id = id;
    u.delta = {dim, std::move(idx), std::move(val)};
    return u;
  };
  // 0.1f and -0.1f cancel to exactly zero: weight 0 keeps its bits.
  REQUIRE(agg.Add(one(1, {0, 1}, {0.1f, 3.0f})).ok());
  REQUIRE(agg.Add(one(2, {0, 1}, {-0.1f, 3.0f})).ok());
  // A term above 2^40 is refused whole, naming the value; nothing is kept.
  auto st = agg.Add(one(3, {1, 5}, {1.0f, 2e12f}));
  CHECK(st.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(st.message()),
             Catch::Contains("client 3") && Catch::Contains("index 5") &&
                 Catch::Contains("fixed-point"));
  CHECK(agg.num_updates() == 2u);
  // The refused client may still send a good one.
  REQUIRE(agg.Add(one(3, {1}, {3.0f})).ok());
  CHECK(agg.Add(one(3, {1}, {3.0f})).code() == absl::StatusCode::kAlreadyExists);
  std::vector<float> w(dim, -0.0f);
  REQUIRE(agg.ApplyTo(&w).ok());
  CHECK(std::signbit(w[0]));  // untouched: -0.0 stays -0.0
  CHECK(w[1] == 3.0f);        // (3 + 3 + 3) / 3
  CHECK(std::signbit(w[5]));  // the refused term left no trace
}

TEST_CASE("FixedPointSum: the documented range and resolution") {
  FixedPointSum sum(2);
  SparseDelta d{2, {0, 1}, {1.0f, -1.0f}};
  CHECK(sum.empty());
  REQUIRE(sum.Add(d, FixedPointSum::kMaxTerm).ok());  // 2^40 is allowed
  REQUIRE(sum.Add(d, FixedPointSum::kMaxTerm).ok());
  CHECK(sum.Get(0) == 2 * FixedPointSum::kMaxTerm);
  CHECK(sum.Get(1) == -2 * FixedPointSum::kMaxTerm);
  CHECK(sum.Add(d, FixedPointSum::kMaxTerm * 1.0001).code() ==
        absl::StatusCode::kOutOfRange);
  CHECK(sum.terms() == 2);
  // 2^-61 rounds to even (0), 3 * 2^-61 to 2^-59; 1 + 2^-60 is exact.
  FixedPointSum fine(3);
  REQUIRE(fine.Add({3, {0, 1, 2}, {std::ldexp(1.0f, -61), std::ldexp(3.0f, -61),
                                   1.0f}},
                   1.0)
              .ok());
  REQUIRE(fine.Add({3, {2}, {std::ldexp(1.0f, -60)}}, 1.0).ok());
  CHECK(fine.Get(0) == 0.0);
  CHECK(fine.Get(1) == std::ldexp(1.0, -59));
  CHECK(fine.Get(2) == 1.0);  // 1 + 2^-60 rounds to 1 in double, once
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

TEST_CASE("FixedPointSum rounds each term as nearbyint(term * 2^60) would") {
  // Values over many magnitudes, ties at 2^-61 multiples among them.
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> exponent(-75, 38);
  std::uniform_real_distribution<double> unit(-1, 1);
  std::vector<float> values;
  for (int i = 0; i < 20000; ++i)
    values.push_back(static_cast<float>(unit(rng) * std::exp2(exponent(rng))));
  for (int k = -3; k <= 3; ++k) values.push_back(std::ldexp(2.0f * k + 1, -61));
  values.push_back(0.0f);
  values.push_back(-0.0f);
  values.push_back(1e-40f);  // subnormal
  const uint64_t n = values.size();
  for (double weight : {1.0, 3.0, 1e-3}) {
    FixedPointSum sum(n);
    SparseDelta d{n, {}, values};
    for (uint32_t i = 0; i < n; ++i) d.indices.push_back(i);
    REQUIRE(sum.Add(d, weight).ok());
    for (uint64_t i = 0; i < n; ++i) {
      const double term = weight * static_cast<double>(values[i]);
      const double want =
          static_cast<double>(static_cast<__int128>(std::nearbyint(
              term * 1152921504606846976.0))) /
          1152921504606846976.0;
      INFO("value " << values[i] << " weight " << weight);
      REQUIRE(sum.Get(i) == want);
    }
  }
}

}  // namespace
}  // namespace shefl
