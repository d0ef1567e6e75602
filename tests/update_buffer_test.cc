// round.mode buffered's arithmetic (common/fed/update_buffer.h) against
// hand computations: the staleness weights, the buffer's weighted,
// normalised step with its server lr, refusals that leave the buffer as it
// was, a fresh buffer equal bit for bit to a synchronous round's fold; and
// the config refusals of common/fed/buffered_plan.h, each naming its key.
#include "common/fed/update_buffer.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/fed/config_load.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

ExperimentConfig Buffered(const std::string& rule, double server_lr,
                          int64_t size, int64_t max_staleness) {
  ExperimentConfig c;
  c.round.mode = "buffered";
  c.aggregation.rule = rule;
  c.buffered.server_lr = server_lr;
  c.buffered.size = size;
  c.buffered.max_staleness = max_staleness;
  return c;
}

ReceivedUpdate Update(int64_t client, Tier tier, std::vector<uint32_t> idx,
                      std::vector<float> val, double samples = 1) {
  ReceivedUpdate u;
  u.client_id = client;
  u.tier = tier;
  u.num_samples = samples;
  u.delta.dim = 4;
  u.delta.indices = std::move(idx);
  u.delta.values = std::move(val);
  return u;
}

std::vector<float> ApplyToZero(UpdateBuffer& b,
                               std::vector<UpdateBuffer::Entry>* entries) {
  std::vector<float> w(4, 0.0f);
  ModelAggregator agg = b.Take(entries);
  REQUIRE(agg.ApplyTo(&w).ok());
  return w;
}

TEST_CASE("staleness weights: sqrt, poly:A and none, and bad rules refused") {
  const StalenessRule sqrt = *ParseStaleness("sqrt");
  CHECK(StalenessWeight(sqrt, 0) == 1.0);
  CHECK(StalenessWeight(sqrt, 3) == 0.5);
  CHECK(StalenessWeight(sqrt, 1) == Approx(1 / std::sqrt(2.0)));
  const StalenessRule poly = *ParseStaleness("poly:1");
  CHECK(StalenessWeight(poly, 3) == 0.25);
  CHECK(StalenessWeight(*ParseStaleness("poly:2"), 1) == 0.25);
  CHECK(StalenessWeight(*ParseStaleness("none"), 50) == 1.0);
  for (const char* bad : {"poly:0", "poly:-1", "poly:x", "linear", ""})
    CHECK_FALSE(ParseStaleness(bad).ok());
}

TEST_CASE("a buffer steps by eta_g sum(s w u) / sum(s w), as computed by hand") {
  UpdateBuffer b(Buffered("uniform", 0.5, 3, 5), CohortShape{}, 4);
  // Fresh; one application old; three old.
  REQUIRE(b.Add(11, Update(1, Tier::kLpc, {0}, {1.0f}), 7, 7).ok());
  REQUIRE(b.Add(12, Update(2, Tier::kLpc, {0, 1}, {2.0f, 4.0f}), 6, 7).ok());
  CHECK_FALSE(b.Full());
  REQUIRE(b.Add(13, Update(3, Tier::kHpc, {2}, {8.0f}), 4, 7).ok());
  CHECK(b.Full());
  std::vector<UpdateBuffer::Entry> e;
  const std::vector<float> w = ApplyToZero(b, &e);
  const double s1 = 1, s2 = 1 / std::sqrt(2.0), s3 = 0.5;
  const double mass = s1 + s2 + s3;
  CHECK(w[0] == Approx(0.5 * (1 * s1 + 2 * s2) / mass).epsilon(1e-6));
  CHECK(w[1] == Approx(0.5 * 4 * s2 / mass).epsilon(1e-6));
  CHECK(w[2] == Approx(0.5 * 8 * s3 / mass).epsilon(1e-6));
  CHECK(w[3] == 0.0f);
  REQUIRE(e.size() == 3u);
  CHECK(e[1].ticket == 12);
  CHECK(e[1].client == 2);
  CHECK(e[1].trained_from == 6u);
  CHECK(e[1].staleness == 1);
  CHECK(e[2].staleness == 3);
  CHECK(e[2].weight == 0.5);
  // Taken: empty again.
  CHECK(b.fill() == 0);
  CHECK(b.entries().empty());
}

TEST_CASE("workload_aware normalises each tier's group, and weights carry shard sizes") {
  ExperimentConfig c = Buffered("workload_aware", 1.0, 3, 5);
  c.aggregation.weight_by_samples = true;
  c.aggregation.hpc_share = 0.5;
  UpdateBuffer b(c, CohortShape{}, 4);
  REQUIRE(b.Add(1, Update(1, Tier::kHpc, {0}, {4.0f}, 30), 2, 2).ok());
  REQUIRE(b.Add(2, Update(2, Tier::kLpc, {0}, {2.0f}, 10), 2, 3).ok());
  REQUIRE(b.Add(3, Update(3, Tier::kLpc, {0}, {6.0f}, 20), 3, 3).ok());
  std::vector<UpdateBuffer::Entry> e;
  const std::vector<float> w = ApplyToZero(b, &e);
  CHECK(e[0].weight == 30);
  CHECK(e[1].weight == Approx(10 / std::sqrt(2.0)));
  // D_H = 4 (alone in its group, whatever its weight); D_L weighted.
  const double wl2 = 10 / std::sqrt(2.0), wl3 = 20;
  const double dl = (2 * wl2 + 6 * wl3) / (wl2 + wl3);
  CHECK(w[0] == Approx(0.5 * 4 + 0.5 * dl).epsilon(1e-6));
}

TEST_CASE("a stale or bad update is refused and leaves the buffer as it was") {
  UpdateBuffer b(Buffered("uniform", 1.0, 2, 2), CohortShape{}, 4);
  REQUIRE(b.Add(1, Update(1, Tier::kLpc, {1}, {3.0f}), 5, 5).ok());
  const absl::Status stale = b.Add(2, Update(2, Tier::kLpc, {1}, {100.0f}), 2, 5);
  CHECK(stale.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(stale.message()).find("buffered.max_staleness 2") !=
        std::string::npos);
  // From a version the model has not reached; a NaN; the same client again.
  CHECK_FALSE(b.Add(3, Update(3, Tier::kLpc, {1}, {1.0f}), 6, 5).ok());
  CHECK_FALSE(b.Add(4, Update(4, Tier::kLpc, {1}, {NAN}), 5, 5).ok());
  CHECK_FALSE(b.Add(5, Update(1, Tier::kLpc, {2}, {1.0f}), 5, 5).ok());
  CHECK(b.fill() == 1);
  REQUIRE(b.Add(6, Update(6, Tier::kLpc, {2}, {1.0f}), 3, 5).ok());  // tau 2
  std::vector<UpdateBuffer::Entry> e;
  const std::vector<float> w = ApplyToZero(b, &e);
  const double s = 1 / std::sqrt(3.0);
  CHECK(w[1] == Approx(3 / (1 + s)).epsilon(1e-6));
  CHECK(w[2] == Approx(s / (1 + s)).epsilon(1e-6));
  REQUIRE(e.size() == 2u);
  CHECK(e[0].ticket == 1);
  CHECK(e[1].ticket == 6);
}

TEST_CASE("fresh updates fold bit for bit as a synchronous round's") {
  for (const std::string rule : {"uniform", "workload_aware"}) {
    for (const bool by_samples : {false, true}) {
      ExperimentConfig c = Buffered(rule, 1.0, 6, 0);
      c.aggregation.weight_by_samples = by_samples;
      const uint64_t d = 1000;
      UpdateBuffer b(c, CohortShape{}, d);
      ModelAggregator sync(c.aggregation, CohortShape{}, d);
      std::mt19937 rng(7);
      std::uniform_real_distribution<float> v(-1, 1);
      for (int64_t client = 0; client < 6; ++client) {
        ReceivedUpdate u;
        u.client_id = 5 - client;  // arrival order is not client order
        u.tier = client % 2 ? Tier::kHpc : Tier::kLpc;
        u.num_samples = 17.0 + 3 * client;
        u.delta.dim = d;
        for (uint32_t i = client; i < d; i += 7) {
          u.delta.indices.push_back(i);
          u.delta.values.push_back(v(rng));
        }
        REQUIRE(sync.Add(u).ok());
        REQUIRE(b.Add(client + 1, u, 9, 9).ok());
      }
      std::vector<float> a(d, 0.25f), x(d, 0.25f);
      REQUIRE(sync.ApplyTo(&a).ok());
      std::vector<UpdateBuffer::Entry> e;
      REQUIRE(b.Take(&e).ApplyTo(&x).ok());
      INFO(rule << " by_samples " << by_samples);
      CHECK(a == x);
    }
  }
}

std::string Refusal(const std::vector<std::string>& sets) {
  std::vector<std::string> all = {"round.mode=buffered"};
  all.insert(all.end(), sets.begin(), sets.end());
  auto c = ParseConfigWithOverrides(testing::SyntheticConfig(""), "c.yaml", all);
  return c.ok() ? "" : std::string(c.status().message());
}

TEST_CASE("buffered rounds refuse at start what they cannot go with, naming the key") {
  CHECK(Refusal({}).empty());
  CHECK(Refusal({"aggregation.secure=common_support"}).find("aggregation.secure") !=
        std::string::npos);
  CHECK(Refusal({"privacy.mode=central"}).find("privacy.mode") != std::string::npos);
  CHECK(Refusal({"aggregation.rule=paper"}).find("aggregation.rule") !=
        std::string::npos);
  const std::string fens =
      Refusal({"method=fens", "rounds=1", "model.num_models=1",
               "clients.per_round_lpc=6", "aggregation.rule=uniform"});
  CHECK(fens.find("round.mode") != std::string::npos);
  CHECK(fens.find("nothing to buffer") != std::string::npos);
  CHECK(Refusal({"clients.over_selection=0.5"}).find("clients.over_selection") !=
        std::string::npos);
  CHECK(Refusal({"buffered.staleness=poly:0"}).find("buffered.staleness") !=
        std::string::npos);
  const std::string big = Refusal({"buffered.size=9", "buffered.concurrency=4"});
  CHECK(big.find("buffered.size") != std::string::npos);
  CHECK(big.find("could never fill") != std::string::npos);
  CHECK(Refusal({"buffered.size=4", "buffered.concurrency=9",
                 "buffered.staleness=poly:0.7"})
            .empty());
  // Synchronous runs do not look at the buffered keys, except for a rule
  // that could never parse.
  auto sync = ParseConfigWithOverrides(testing::SyntheticConfig(""), "c.yaml",
                                       {"aggregation.secure=common_support",
                                        "buffered.size=99"});
  CHECK(sync.ok());
}

}  // namespace
}  // namespace shefl
