// Fed-ensemble inference (004; docs/DESIGN.md, "Ensemble inference"):
// personalised member weights, the predictive entropy and the variance of the
// whole predictive distribution across members (Eq. 10), against direct
// computations; and the pieces of client-level evaluation (003 Eq. 5-7): the
// held-out split and the mean / worst / p10 summary. Fast: no processes,
// small tensors.
#include <ATen/Functions.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "common/core/config.h"
#include "common/fed/client_metrics.h"
#include "common/fed/config_load.h"
#include "common/learn/evaluate.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("personalised weights sum to 1 and favour the lower-loss member") {
  const std::vector<double> losses = {0.9, 0.3, 1.4, 0.3001};
  for (double gamma : {0.01, 0.1, 1.0, 10.0}) {
    INFO("gamma " << gamma);
    auto a = PersonalisedWeights(losses, gamma);
    REQUIRE(a.ok());
    CHECK(std::accumulate(a->begin(), a->end(), 0.0) == Approx(1.0));
    // A lower loss never gets a smaller weight, and strictly more here.
    CHECK((*a)[1] > (*a)[0]);
    CHECK((*a)[0] > (*a)[2]);
    CHECK((*a)[1] > (*a)[3]);
    CHECK(std::max_element(a->begin(), a->end()) - a->begin() == 1);
  }
  // The closed form of 004 Eq. 4 with gamma dividing (docs/DESIGN.md, "Ensemble
  // inference").
  auto two = PersonalisedWeights({0.5, 1.5}, 2.0);
  REQUIRE(two.ok());
  CHECK((*two)[0] == Approx(1.0 / (1.0 + std::exp(-0.5))));
  CHECK((*two)[1] == Approx(std::exp(-0.5) / (1.0 + std::exp(-0.5))));
}

// Direct loops over p[k][i][c] (probabilities), weights w and labels y.
struct Direct {
  double entropy = 0, variance = 0, mutual = 0;
  double entropy_right = 0, entropy_wrong = 0;
  double variance_right = 0, variance_wrong = 0;
  int64_t right = 0;
};

Direct Compute(const std::vector<std::vector<std::vector<double>>>& p,
               const std::vector<double>& w, const std::vector<int64_t>& y) {
  const size_t m = p.size(), n = p[0].size(), c = p[0][0].size();
  Direct d;
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> bar(c, 0.0);
    for (size_t k = 0; k < m; ++k)
      for (size_t j = 0; j < c; ++j) bar[j] += w[k] * p[k][i][j];
    size_t pred = 0;
    for (size_t j = 1; j < c; ++j)
      if (bar[j] > bar[pred]) pred = j;
    double h = 0, var = 0, member_h = 0;
    for (size_t j = 0; j < c; ++j) {
      if (bar[j] > 0) h -= bar[j] * std::log(bar[j]);
      for (size_t k = 0; k < m; ++k) {
        var += w[k] * (p[k][i][j] - bar[j]) * (p[k][i][j] - bar[j]);
        if (p[k][i][j] > 0) member_h -= w[k] * p[k][i][j] * std::log(p[k][i][j]);
      }
    }
    d.entropy += h / n;
    d.variance += var / n;
    d.mutual += (h - member_h) / n;
    if (static_cast<int64_t>(pred) == y[i]) {
      ++d.right;
      d.entropy_right += h;
      d.variance_right += var;
    } else {
      d.entropy_wrong += h;
      d.variance_wrong += var;
    }
  }
  const double wrong = static_cast<double>(n - d.right);
  d.entropy_right /= std::max<double>(d.right, 1);
  d.variance_right /= std::max<double>(d.right, 1);
  d.entropy_wrong /= std::max(wrong, 1.0);
  d.variance_wrong /= std::max(wrong, 1.0);
  return d;
}

at::Tensor ToTensor(const std::vector<std::vector<std::vector<double>>>& p) {
  std::vector<double> flat;
  for (const auto& a : p)
    for (const auto& b : a) flat.insert(flat.end(), b.begin(), b.end());
  return at::tensor(flat, at::kDouble)
      .view({static_cast<int64_t>(p.size()), static_cast<int64_t>(p[0].size()),
             static_cast<int64_t>(p[0][0].size())});
}

void CheckAgainstDirect(const EvalResult& r, const Direct& d) {
  CHECK(r.mean_entropy == Approx(d.entropy).epsilon(1e-9));
  CHECK(r.predictive_variance == Approx(d.variance).epsilon(1e-9));
  CHECK(r.mutual_information == Approx(d.mutual).epsilon(1e-9).margin(1e-12));
  CHECK(r.num_correct == d.right);
  CHECK(r.entropy_correct == Approx(d.entropy_right).epsilon(1e-9));
  CHECK(r.entropy_wrong == Approx(d.entropy_wrong).epsilon(1e-9));
  CHECK(r.predictive_variance_correct ==
        Approx(d.variance_right).epsilon(1e-9).margin(1e-15));
  CHECK(r.predictive_variance_wrong ==
        Approx(d.variance_wrong).epsilon(1e-9).margin(1e-15));
}

TEST_CASE("entropy and predictive variance equal a direct computation") {
  // By hand: two members, two samples, labels 0.
  //   member 0: [0.9, 0.1], [0.4, 0.6]   member 1: [0.7, 0.3], [0.2, 0.8]
  // Ensemble [0.8, 0.2] (right) and [0.3, 0.7] (wrong); each class of each
  // sample is 0.1 away from the mean in both members: variance
  // 0.5 * 0.01 * 2 + 0.5 * 0.01 * 2 = 0.02 per sample.
  const std::vector<std::vector<std::vector<double>>> hand = {
      {{0.9, 0.1}, {0.4, 0.6}}, {{0.7, 0.3}, {0.2, 0.8}}};
  auto r = EvaluateFromProbs(ToTensor(hand), at::tensor({0, 0}, at::kLong));
  REQUIRE(r.ok());
  CHECK(r->predictive_variance == Approx(0.02));
  CHECK(r->predictive_variance_correct == Approx(0.02));
  CHECK(r->predictive_variance_wrong == Approx(0.02));
  const double h0 = -(0.8 * std::log(0.8) + 0.2 * std::log(0.2));
  const double h1 = -(0.3 * std::log(0.3) + 0.7 * std::log(0.7));
  CHECK(r->entropy_correct == Approx(h0));
  CHECK(r->entropy_wrong == Approx(h1));
  CheckAgainstDirect(*r, Compute(hand, {0.5, 0.5}, {0, 0}));

  // A seeded random case: 3 members, 40 samples, 5 classes, unequal weights.
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(0.01, 1.0);
  std::vector<std::vector<std::vector<double>>> p(
      3, std::vector<std::vector<double>>(40, std::vector<double>(5)));
  for (auto& member : p)
    for (auto& row : member) {
      double s = 0;
      for (double& x : row) s += (x = u(rng) * u(rng));
      for (double& x : row) x /= s;
    }
  std::vector<int64_t> y(40);
  for (auto& v : y) v = static_cast<int64_t>(rng() % 5);
  const std::vector<double> w = {0.2, 0.5, 0.3};
  auto weighted = EvaluateFromProbs(ToTensor(p), at::tensor(y, at::kLong), w);
  REQUIRE(weighted.ok());
  const Direct d = Compute(p, w, y);
  REQUIRE(d.right > 0);
  REQUIRE(d.right < 40);
  CheckAgainstDirect(*weighted, d);

  // Identical members: no disagreement, no variance, no mutual information.
  const std::vector<std::vector<std::vector<double>>> same = {p[0], p[0]};
  auto s = EvaluateFromProbs(ToTensor(same), at::tensor(y, at::kLong));
  REQUIRE(s.ok());
  CHECK(s->predictive_variance == Approx(0.0).margin(1e-15));
  CHECK(s->mutual_information == Approx(0.0).margin(1e-12));
}

TEST_CASE("the held-out split is a seeded disjoint cut of the shard") {
  std::vector<int64_t> shard;
  for (int64_t i = 0; i < 50; ++i) shard.push_back(3 * i + 1);
  auto s = SplitClientShard(shard, 0.2, 7, 3);
  REQUIRE(s.ok());
  CHECK(s->held_out.size() == 10u);
  CHECK(s->train.size() == 40u);
  CHECK(std::is_sorted(s->held_out.begin(), s->held_out.end()));
  CHECK(std::is_sorted(s->train.begin(), s->train.end()));
  std::set<int64_t> all(s->train.begin(), s->train.end());
  for (int64_t i : s->held_out) CHECK(all.insert(i).second);  // disjoint
  CHECK(std::vector<int64_t>(all.begin(), all.end()) == shard);
  // A pure function of (seed, client); another client or seed differs.
  CHECK(SplitClientShard(shard, 0.2, 7, 3)->held_out == s->held_out);
  CHECK(SplitClientShard(shard, 0.2, 7, 4)->held_out != s->held_out);
  CHECK(SplitClientShard(shard, 0.2, 8, 3)->held_out != s->held_out);
  // 0 is off: the shard is untouched.
  auto off = SplitClientShard(shard, 0.0, 7, 3);
  REQUIRE(off.ok());
  CHECK(off->train == shard);
  CHECK(off->held_out.empty());
  // Small shards keep one sample on each side; one sample holds nothing out.
  CHECK(HeldOutCount(2, 0.9) == 1);
  CHECK(HeldOutCount(10, 0.01) == 1);
  CHECK(HeldOutCount(1, 0.5) == 0);
  CHECK(HeldOutCount(10, 0.25) == 3);  // llround(2.5)
  CHECK_FALSE(SplitClientShard(shard, 1.0, 7, 3).ok());
  CHECK_FALSE(SplitClientShard(shard, -0.1, 7, 3).ok());
}

TEST_CASE("client-level mean worst and p10 follow 003 Eq. 5-7") {
  // Sorted 0.1 0.3 0.5 0.7 0.9: Q_0.1 at position 0.4 -> 0.1 + 0.4 * 0.2.
  const ClientLevelSummary s = SummariseClients({0.5, 0.9, 0.7, 0.1, 0.3});
  CHECK(s.clients == 5);
  CHECK(s.mean == Approx(0.5));
  CHECK(s.worst == Approx(0.1));
  CHECK(s.p10 == Approx(0.18));
  // Eleven values 0, 0.1, ..., 1: Q_0.1 is exactly the second.
  std::vector<double> v;
  for (int i = 10; i >= 0; --i) v.push_back(i / 10.0);
  CHECK(Quantile(v, 0.1) == Approx(0.1));
  CHECK(Quantile({0.4}, 0.1) == Approx(0.4));
  CHECK(SummariseClients({}).clients == 0);
}

TEST_CASE("the eval keys load with defaults off and are refused with own data") {
  auto c = ParseConfig("method: fedensemble\n", "t.yaml");
  REQUIRE(c.ok());
  CHECK(c->eval.client_holdout == 0);
  CHECK(c->eval.gamma == 0);
  auto on = ParseConfigWithOverrides(
      "method: fedensemble\n", "t.yaml",
      {"eval.client_holdout=0.2", "eval.gamma=0.5"});
  REQUIRE(on.ok());
  CHECK(on->eval.client_holdout == 0.2);
  CHECK(on->eval.gamma == 0.5);
  CHECK_THAT(ConfigToYaml(*on), Catch::Contains("client_holdout: 0.2"));
  CHECK_FALSE(
      ParseConfigWithOverrides("", "t.yaml", {"eval.client_holdout=1"}).ok());
  CHECK_FALSE(ParseConfigWithOverrides("", "t.yaml", {"eval.gamma=-1"}).ok());
  for (const char* key : {"eval.client_holdout", "eval.gamma"}) {
    auto own = ParseConfigWithOverrides(
        "partition: {scheme: own}\n", "t.yaml", {std::string(key) + "=0.3"});
    REQUIRE_FALSE(own.ok());
    CHECK_THAT(std::string(own.status().message()), Catch::Contains(key));
    CHECK_THAT(std::string(own.status().message()), Catch::Contains("own"));
  }
}

}  // namespace
}  // namespace shefl
