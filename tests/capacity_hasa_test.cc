// Capacity levels (docs/CAPACITY_HASA.md) (an HPC trains m_i of the M
// models, the subset rotating) and HASA-style allocation (003): the
// rotation by hand, the scheduler's plans, the aggregation weights from
// the counts received, the JSD scores, ranks, the scale-and-project budget
// and the caps, each against numbers worked out by hand.
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/rng.h"
#include "common/fed/aggregate.h"
#include "common/fed/capacity.h"
#include "common/fed/config_load.h"
#include "common/fed/hasa.h"
#include "common/fed/schedule.h"
#include "common/net/label_counts.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

ExperimentConfig Parse(const std::string& yaml) {
  auto c = ParseConfig(yaml, "t.yaml");
  INFO(yaml);
  REQUIRE(c.ok());
  return *c;
}

std::string ErrorOf(const std::string& yaml) {
  auto c = ParseConfig(yaml, "t.yaml");
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

using Models = std::vector<int64_t>;

// ------------------------------------------------------------ rotation

TEST_CASE("capacity 2 of 5 models: windows of two that tile the cycle") {
  // (t + o) * 2 mod 5 is where the window starts.
  CHECK(RotatingModels(2, 0, 0, 5) == Models{0, 1});
  CHECK(RotatingModels(2, 1, 0, 5) == Models{2, 3});
  CHECK(RotatingModels(2, 2, 0, 5) == Models{0, 4});
  CHECK(RotatingModels(2, 3, 0, 5) == Models{1, 2});
  CHECK(RotatingModels(2, 4, 0, 5) == Models{3, 4});
  // Offset 1 (the next cluster) takes the next window in the same round.
  CHECK(RotatingModels(2, 0, 1, 5) == Models{2, 3});
  // Over any 5 consecutive rounds, from any start and offset, each model
  // exactly twice.
  for (int64_t start : {0, 3, 17})
    for (int64_t offset : {0, 1, 4}) {
      std::map<int64_t, int> seen;
      for (int64_t t = start; t < start + 5; ++t)
        for (int64_t m : RotatingModels(2, t, offset, 5)) seen[m]++;
      CHECK(seen == std::map<int64_t, int>{{0, 2}, {1, 2}, {2, 2}, {3, 2}, {4, 2}});
    }
  CHECK(RotatingModels(5, 3, 2, 5) == Models{0, 1, 2, 3, 4});
  CHECK(RotatingModels(7, 3, 2, 5) == Models{0, 1, 2, 3, 4});
  CHECK(RotatingModels(0, 3, 2, 5).empty());
}

TEST_CASE("a fractional capacity trains floor or ceil in turn and is exact in the long run") {
  // c = 2.5: floor(2.5 t) = 0, 2, 5, 7, 10 -> 2, 3, 2, 3 models.
  CHECK(RotatingModels(2.5, 0, 0, 5) == Models{0, 1});
  CHECK(RotatingModels(2.5, 1, 0, 5) == Models{2, 3, 4});
  CHECK(RotatingModels(2.5, 2, 0, 5) == Models{0, 1});
  CHECK(RotatingModels(2.5, 3, 0, 5) == Models{2, 3, 4});
  // c = 0.6 * 5 = 3 exactly (not 2.999...): three every round.
  for (int64_t t = 0; t < 20; ++t)
    CHECK(RotatingModels(0.6 * 5, t, 0, 5).size() == 3u);
  // c = 1.7 over 100 rounds: 170 models, every model 34 times.
  std::map<int64_t, int> seen;
  size_t total = 0;
  for (int64_t t = 0; t < 100; ++t) {
    const Models m = RotatingModels(1.7, t, 3, 5);
    CHECK((m.size() == 1u || m.size() == 2u));
    total += m.size();
    for (int64_t j : m) seen[j]++;
  }
  CHECK(total == 170u);
  for (const auto& [m, n] : seen) CHECK(n == 34);
}

TEST_CASE("clients.hpc_capacity parses levels and refuses bad ones by name") {
  auto levels = ParseCapacityLevels("5, 3,2", 5);
  REQUIRE(levels.ok());
  CHECK(*levels == Models{5, 3, 2});
  CHECK(ConfiguredHpcCapacity(*levels, 4, 5) == 3);  // 4 mod 3 = 1
  CHECK(ConfiguredHpcCapacity({}, 4, 5) == 5);
  CHECK_THAT(ErrorOf("clients: {hpc_capacity: '6'}\n"),
             Catch::Contains("clients.hpc_capacity") &&
                 Catch::Contains("[1, model.num_models = 5]"));
  CHECK_THAT(ErrorOf("clients: {hpc_capacity: 'x'}\n"),
             Catch::Contains("clients.hpc_capacity"));
  CHECK_THAT(ErrorOf("method: fedensemble\nclients: {hpc_capacity: 2}\n"),
             Catch::Contains("clients.hpc_capacity"));
  CHECK(Parse("clients: {hpc_capacity: 2}\n").clients.hpc_capacity == "2");
  // The resolved config loads again to itself.
  const std::string yaml = ConfigToYaml(Parse("clients: {hpc_capacity: '4,2'}\n"));
  CHECK(ConfigToYaml(Parse(yaml)) == yaml);
}

// ------------------------------------------------------------ scheduler

const char* kTiered =
    "seed: 11\n"
    "model: {num_models: 5}\n"
    "clients: {num_clients: 20, num_hpc: 10, per_round_hpc: 3, "
    "per_round_lpc: 5}\n";

TEST_CASE("capacity levels: each HPC trains its window and the LPCs are unchanged") {
  const ExperimentConfig full = Parse(kTiered);
  const ExperimentConfig two =
      Parse(std::string(kTiered) + "clients: {num_clients: 20, num_hpc: 10, "
                                   "per_round_hpc: 3, per_round_lpc: 5, "
                                   "hpc_capacity: '2,3'}\n");
  auto a = Scheduler::Create(full, 1000);
  auto b = Scheduler::Create(two, 1000);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const Clusters& clusters = b->clusters();
  std::map<int64_t, int64_t> cluster_of;
  for (size_t c = 0; c < clusters.members.size(); ++c)
    for (int64_t id : clusters.members[c]) cluster_of[id] = c;
  std::map<int64_t, std::map<int64_t, int>> per_client;  // HPC -> model -> n
  for (int64_t t = 0; t < 10; ++t) {
    const RoundPlan pa = a->Plan(t), pb = b->Plan(t);
    REQUIRE(pa.tasks.size() == pb.tasks.size());
    CHECK_FALSE(pa.hpc_subsets);
    CHECK(pb.hpc_subsets);
    for (size_t i = 0; i < pb.tasks.size(); ++i) {
      const ClientTask& ta = pa.tasks[i];
      const ClientTask& tb = pb.tasks[i];
      REQUIRE(ta.client_id == tb.client_id);  // the same cohort
      if (tb.tier == Tier::kLpc) {
        CHECK(ta.models == tb.models);
        continue;
      }
      // Even ids take level 2, odd ids 3 ("2,3" dealt by id); the window
      // starts at (t + cluster) * m mod 5.
      const int64_t m = tb.client_id % 2 == 0 ? 2 : 3;
      const int64_t c = cluster_of.at(tb.client_id);
      REQUIRE(c < 3);  // HPC clusters come first
      Models want;
      for (int64_t j = 0; j < m; ++j) want.push_back(((t + c) * m + j) % 5);
      std::sort(want.begin(), want.end());
      INFO("round " << t << " client " << tb.client_id << " cluster " << c);
      CHECK(tb.models == want);
      CHECK(tb.k == std::vector<int64_t>(m, b->k_hpc()));
      CHECK(ta.models.size() == 5u);
    }
  }
}

TEST_CASE("capacity levels cover every model: each HPC over five consecutive rounds") {
  // An HPC's cluster is fixed, so its windows over any 5 rounds tile the
  // cycle m times, whenever it is drawn.
  const ExperimentConfig c =
      Parse(std::string(kTiered) + "clients: {num_clients: 20, num_hpc: 10, "
                                   "per_round_hpc: 3, per_round_lpc: 5, "
                                   "hpc_capacity: 2}\n");
  auto s = Scheduler::Create(c, 1000);
  REQUIRE(s.ok());
  std::set<int64_t> covered;
  for (int64_t t = 0; t < 5; ++t)
    for (const ClientTask& task : s->Plan(t).tasks)
      if (task.tier == Tier::kHpc)
        for (int64_t m : task.models) covered.insert(m);
  CHECK(covered == std::set<int64_t>{0, 1, 2, 3, 4});
  // And per round, the three HPC clusters' windows (t+0)*2, (t+1)*2,
  // (t+2)*2 take 6 consecutive slots: every model at least once.
  for (int64_t t = 0; t < 5; ++t) {
    std::map<int64_t, int> n;
    for (const ClientTask& task : s->Plan(t).tasks)
      if (task.tier == Tier::kHpc)
        for (int64_t m : task.models) n[m]++;
    INFO("round " << t);
    CHECK(n.size() == 5u);
  }
}

TEST_CASE("a declared capacity overrides the config's level") {
  auto s = Scheduler::Create(Parse(kTiered), 1000);
  REQUIRE(s.ok());
  const RoundPlan p = s->Plan(0, nullptr, [](int64_t id) {
    return id == 3 || id == 4 || id == 5 ? 1.0 : 0.0;
  });
  bool some = false;
  for (const ClientTask& t : p.tasks) {
    if (t.tier != Tier::kHpc) continue;
    const bool declared = t.client_id >= 3 && t.client_id <= 5;
    some |= declared;
    CHECK(t.models.size() == (declared ? 1u : 5u));
  }
  CHECK(p.hpc_subsets == some);
}

// ------------------------------------------------------------ weights

SparseDelta Dense(float v) { return {2, {0, 1}, {v, v}}; }

TEST_CASE("weights follow the counts received when HPCs train subsets") {
  // Model m got 2 HPC updates (1 and 3: D_H = 2) and 1 LPC update (10).
  // M = 3, C_h = 2, C_l = 3 planned.
  auto step = [](const std::string& rule, bool subsets) {
    AggregationConfig a;
    a.rule = rule;
    ModelAggregator agg(a, CohortShape{3, 2, 3, subsets}, 2);
    REQUIRE(agg.Add({0, Tier::kHpc, 1, Dense(1)}).ok());
    REQUIRE(agg.Add({1, Tier::kHpc, 1, Dense(3)}).ok());
    REQUIRE(agg.Add({5, Tier::kLpc, 1, Dense(10)}).ok());
    std::vector<float> w(2, 0.0f);
    REQUIRE(agg.ApplyTo(&w).ok());
    return static_cast<double>(w[0]);
  };
  // Eq. 2 with planned counts: a_h = (3*2 + 3) / 18 = 0.5,
  // a_l = 9 / 6 = 1.5; (0.5 * 4 + 1.5 * 10) / 3 = 17/3.
  CHECK(step("paper", false) == Approx(17.0 / 3));
  // With subsets the planned counts do not hold: 001's per-model
  // coefficients from H = 2, L = 1: (D_H + D_L) / 2 = 6.
  CHECK(step("paper", true) == Approx(6.0));
  CHECK(step("paper_per_model", true) == Approx(6.0));
  CHECK(step("paper_per_model", false) == Approx(6.0));
  CHECK(step("workload_aware", true) == Approx(6.0));
  // A model only one HPC trained this round: D_H alone.
  AggregationConfig a;
  a.rule = "paper";
  ModelAggregator one(a, CohortShape{3, 2, 3, true}, 2);
  REQUIRE(one.Add({1, Tier::kHpc, 1, Dense(3)}).ok());
  std::vector<float> w(2, 0.0f);
  REQUIRE(one.ApplyTo(&w).ok());
  CHECK(w[0] == Approx(3.0));
}

// ------------------------------------------------------------ HASA maths

TEST_CASE("Jensen-Shannon divergence and average ranks by hand") {
  // p = (1, 0), q = (1/2, 1/2), m = (3/4, 1/4):
  // 1/2 ln(4/3) + 1/2 (1/2 ln(2/3) + 1/2 ln 2) = 0.2157616
  CHECK(JensenShannon({1, 0}, {0.5, 0.5}) == Approx(0.2157616).epsilon(1e-6));
  CHECK(JensenShannon({0.3, 0.7}, {0.3, 0.7}) == 0.0);
  // Ranks 3.5, 1, 3.5, 2 of K = 4 -> (r - 1) / 3.
  const std::vector<double> r = RankNormalise({0.3, 0.1, 0.3, 0.2});
  CHECK(r[0] == Approx(2.5 / 3));
  CHECK(r[1] == 0.0);
  CHECK(r[2] == Approx(2.5 / 3));
  CHECK(r[3] == Approx(1.0 / 3));
  CHECK(RankNormalise({4.0}) == std::vector<double>{0.5});
  CHECK(MinMaxNormalise({10, 30, 20}) == std::vector<double>{0, 1, 0.5});
  CHECK(MinMaxNormalise({7, 7}) == std::vector<double>{0.5, 0.5});
}

// Four clients, two classes: sizes 200, 100, 50, 150 (N = 500).
const std::vector<double> kSizes = {200, 100, 50, 150};
const std::vector<std::vector<uint64_t>> kCounts = {
    {100, 100}, {100, 0}, {0, 50}, {90, 60}};

TEST_CASE("HASA's allocation of four clients equals the hand computation") {
  HasaConfig h;  // B = 0.5, [0.2, 0.8], a = 1, T = 2
  auto a = AllocateHasa(h, 5, kSizes, kCounts, {0, 0, 0, 0});
  REQUIRE(a.ok());
  // Pooled (290, 210), smoothed (291, 211) / 502. By distance from it:
  // client 3 (91, 61)/152 nearest, then client 0 (101, 101)/202, then
  // client 1 (101, 1)/102, client 2 (1, 51)/52 farthest.
  CHECK(a->score[3] < a->score[0]);
  CHECK(a->score[0] < a->score[1]);
  CHECK(a->score[1] < a->score[2]);
  CHECK(a->normalised == std::vector<double>{1.0 / 3, 2.0 / 3, 1, 0});
  // r0 = 0.4, 0.6, 0.8, 0.2; size-weighted mean 210 / 500 = 0.42.
  // Pass 1: s = 0.5 / 0.42 -> 0.476190, 0.714286, 0.952381 -> 0.8 (cap),
  //   0.238095; mean 242.381 / 500 = 0.484762.
  // Pass 2: s = 1.031434 -> 0.491159, 0.736739, 0.8, 0.245579.
  CHECK(a->width[0] == Approx(0.491159).epsilon(1e-5));
  CHECK(a->width[1] == Approx(0.736739).epsilon(1e-5));
  CHECK(a->width[2] == Approx(0.8));
  CHECK(a->width[3] == Approx(0.245579).epsilon(1e-5));
  // Realised budget 248.743 / 500 = 0.497485: within 003's 0.4 points.
  CHECK(a->budget == Approx(0.497485).epsilon(1e-5));
  CHECK(std::fabs(a->budget - 0.5) <= 0.005);
}

TEST_CASE("HASA's ablations by hand: uniform and size and mixed and inverse") {
  HasaConfig h;
  h.allocation = "uniform";
  auto u = AllocateHasa(h, 5, kSizes, kCounts, {0, 0, 0, 0});
  REQUIRE(u.ok());
  for (double w : u->width) CHECK(w == Approx(0.5));  // r_i = B (003 Eq. 19)
  h.allocation = "inverse";  // 1 - h~: 2/3, 1/3, 0, 1
  auto inv = AllocateHasa(h, 5, kSizes, kCounts, {0, 0, 0, 0});
  REQUIRE(inv.ok());
  CHECK(inv->normalised[0] == Approx(2.0 / 3));
  CHECK(inv->normalised[1] == Approx(1.0 / 3));
  CHECK(inv->normalised[2] == Approx(0));
  CHECK(inv->normalised[3] == Approx(1));
  // r0 = 0.6, 0.4, 0.2, 0.8; mean (120 + 40 + 10 + 120) / 500 = 0.58;
  // pass 1: s = 0.862069 -> 0.517241, 0.344828, 0.2 (floor), 0.689655,
  // mean (103.448 + 34.483 + 10 + 103.448) / 500 = 0.502759;
  // pass 2: s = 0.994512 -> 0.514403, 0.342935, 0.2, 0.685871.
  CHECK(inv->width[0] == Approx(0.514403).epsilon(1e-5));
  CHECK(inv->width[1] == Approx(0.342935).epsilon(1e-5));
  CHECK(inv->width[2] == Approx(0.2));
  CHECK(inv->width[3] == Approx(0.685871).epsilon(1e-5));
  h.allocation = "size";  // n~ = (200-50)/150 = 1, 1/3, 0, 2/3
  auto size = AllocateHasa(h, 5, kSizes, kCounts, {0, 0, 0, 0});
  REQUIRE(size.ok());
  CHECK(size->normalised[0] == Approx(1));
  CHECK(size->normalised[1] == Approx(1.0 / 3));
  CHECK(size->normalised[2] == Approx(0));
  CHECK(size->normalised[3] == Approx(2.0 / 3));
  h.allocation = "mixed";  // gamma 0.5: (n~ + h~) / 2
  auto mixed = AllocateHasa(h, 5, kSizes, kCounts, {0, 0, 0, 0});
  REQUIRE(mixed.ok());
  CHECK(mixed->normalised[0] == Approx((1 + 1.0 / 3) / 2));
  CHECK(mixed->normalised[1] == Approx((1.0 / 3 + 2.0 / 3) / 2));
  CHECK(mixed->normalised[2] == Approx((0 + 1) / 2.0));
  CHECK(mixed->normalised[3] == Approx((2.0 / 3 + 0) / 2));
}

TEST_CASE("HASA respects each client's declared cap") {
  HasaConfig h;
  // Client 1 declares 3 of 5 models: u = min(0.8, 0.6) = 0.6. Client 2
  // declares 1: u = 0.2 (a cap below r_min wins).
  auto a = AllocateHasa(h, 5, kSizes, kCounts, {0, 3, 1, 0});
  REQUIRE(a.ok());
  CHECK(a->cap == std::vector<double>{0.8, 0.6, 0.2, 0.8});
  for (size_t i = 0; i < 4; ++i) CHECK(a->width[i] <= a->cap[i] + 1e-12);
  CHECK(a->width[1] == Approx(0.6));
  CHECK(a->width[2] == Approx(0.2));
}

TEST_CASE("HASA meets the budget within 003's tolerance on a Dirichlet federation") {
  // 100 clients, 10 classes, Dir(0.6) label mixes, sizes 20..1199, from a
  // fixed seed; every ablation within 0.005 of B (003 reports 49.6% for
  // 50%) and inside [r_min, u_i]; the declared caps bind for some.
  auto rng = MakeRng(5, SeedPurpose::kPartition);
  std::vector<double> sizes;
  std::vector<std::vector<uint64_t>> counts;
  std::vector<double> caps;
  std::gamma_distribution<double> gamma(0.6, 1.0);
  for (int i = 0; i < 100; ++i) {
    const uint64_t n = 20 + UniformBelow(rng, 1180);
    std::vector<double> mix(10);
    double total = 0;
    for (double& x : mix) total += (x = gamma(rng) + 1e-9);
    std::vector<uint64_t> c(10, 0);
    uint64_t left = n;
    for (int k = 0; k < 9; ++k) {
      c[k] = std::min<uint64_t>(left, static_cast<uint64_t>(n * mix[k] / total));
      left -= c[k];
    }
    c[9] = left;
    sizes.push_back(static_cast<double>(n));
    counts.push_back(c);
    caps.push_back(i % 7 == 0 ? 2.0 : 0.0);  // some declare 2 of 5
  }
  for (const char* kind : {"hasa", "uniform", "size", "mixed", "inverse"}) {
    HasaConfig h;
    h.allocation = kind;
    auto a = AllocateHasa(h, 5, sizes, counts, caps);
    REQUIRE(a.ok());
    INFO(kind << ": realised budget " << a->budget);
    CHECK(std::fabs(a->budget - h.budget) <= 0.005);
    if (std::string(kind) == "inverse") {
      // 003's two passes alone miss here (the caps bind): 0.4920.
      std::vector<double> r0;
      for (double s : a->normalised) r0.push_back(h.r_min + (h.r_max - h.r_min) * s);
      const std::vector<double> two =
          ScaleAndProject(r0, sizes, a->cap, h.r_min, h.budget, 2);
      CHECK(SizeWeightedMean(two, sizes) == Approx(0.492049).epsilon(1e-5));
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      CHECK(a->width[i] <= a->cap[i] + 1e-12);
      CHECK(a->width[i] >= std::min(h.r_min, a->cap[i]) - 1e-12);
      if (caps[i] > 0) CHECK(a->cap[i] == Approx(0.4));
    }
  }
}

TEST_CASE("HASA's config: presets and refusals name the key") {
  const ExperimentConfig c = Parse("method: hasa\n");
  CHECK(c.aggregation.rule == "uniform");
  CHECK(c.aggregation.weight_by_samples);  // 003: size-proportional
  CHECK(c.compression.density == 1.0);     // dense, as the baselines
  CHECK(c.hasa.allocation == "hasa");
  CHECK_THAT(ErrorOf("method: hasa\nhasa: {allocation: widest}\n"),
             Catch::Contains("hasa.allocation"));
  CHECK_THAT(ErrorOf("method: hasa\nhasa: {budget: 0.9}\n"),
             Catch::Contains("hasa.budget"));
  CHECK_THAT(ErrorOf("method: hasa\nhasa: {r_min: 0.1, budget: 0.5}\n"),
             Catch::Contains("hasa.r_min") && Catch::Contains("at least one"));
  const std::string yaml = ConfigToYaml(
      Parse("method: hasa\nhasa: {allocation: mixed, gamma: 0.25}\n"));
  CHECK(ConfigToYaml(Parse(yaml)) == yaml);
}

TEST_CASE("hasa plans: each client trains its rotating share and B * M when unknown") {
  const ExperimentConfig c = Parse(
      "method: hasa\nseed: 3\nmodel: {num_models: 5}\n"
      "clients: {num_clients: 12, num_hpc: 0, per_round_hpc: 0, "
      "per_round_lpc: 6}\n");
  auto s = Scheduler::Create(c, 1000);
  REQUIRE(s.ok());
  const Clusters& clusters = s->clusters();
  std::map<int64_t, int64_t> cluster_of;
  for (size_t k = 0; k < clusters.members.size(); ++k)
    for (int64_t id : clusters.members[k]) cluster_of[id] = k;
  auto cap = [](int64_t id) { return id < 6 ? 1.0 + 0.5 * id : 0.0; };
  for (int64_t t = 0; t < 4; ++t) {
    const RoundPlan p = s->Plan(t, nullptr, cap);
    REQUIRE(p.tasks.size() == 6u);
    for (const ClientTask& task : p.tasks) {
      const double want_c = task.client_id < 6 ? cap(task.client_id) : 2.5;
      INFO("round " << t << " client " << task.client_id);
      CHECK(task.models ==
            RotatingModels(want_c, t, cluster_of.at(task.client_id), 5));
      CHECK(task.k == std::vector<int64_t>(task.models.size(), 1000));
    }
  }
}

TEST_CASE("label-count bytes are exactly what the histogram adds to the report") {
  v1::TaskFeedRequest req;
  req.set_session_id(std::string(32, 'a'));
  for (int c = 0; c < 3; ++c) {
    v1::LogicalClient* lc = req.add_clients();
    lc->set_client_id(c);
    lc->set_num_samples(500);
  }
  v1::TaskFeedRequest with = req;
  uint64_t sum = 0;
  for (int c = 0; c < 3; ++c) {
    for (int k = 0; k < 10; ++k)
      with.mutable_clients(c)->add_label_counts(c == 1 ? 50 : 1000 * k);
    sum += LabelCountBytes(with.clients(c));
  }
  CHECK(sum == with.ByteSizeLong() - req.ByteSizeLong());
  // Client 1: ten 1-byte varints, packed: tag + length + 10 = 12 bytes.
  CHECK(LabelCountBytes(with.clients(1)) == 12u);
  CHECK(LabelCountBytes(req.clients(0)) == 0u);
  CHECK(LabelHistogram({0, 1, 1, 2, 9}, {0, 1, 2, 4}, 3) ==
        std::vector<uint64_t>{1, 2, 0});
}

}  // namespace
}  // namespace shefl
