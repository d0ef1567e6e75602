#include "common/fed/schedule.h"

#include <cmath>
#include <map>
#include <set>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

ExperimentConfig PaperLike(int64_t c_l, int64_t M, const char* form) {
  ExperimentConfig c;
  c.model.num_models = M;
  c.clients.num_clients = 100;
  c.clients.num_hpc = 50;
  c.clients.per_round_hpc = 5;
  c.clients.per_round_lpc = c_l;
  c.schedule.assignment = form;
  return c;
}

TEST_CASE("latin gives every model exactly C_l/M LPCs each round") {
  for (int64_t c_l : {5, 10, 20}) {
    auto s = Scheduler::Create(PaperLike(c_l, 5, "latin"), 1000);
    REQUIRE(s.ok());
    for (int64_t t = 0; t < 40; ++t) {
      std::map<int64_t, int> per_model;
      for (const ClientTask& task : s->Plan(t).tasks)
        if (task.tier == Tier::kLpc) per_model[task.models.at(0)]++;
      INFO("C_l=" << c_l << " round " << t);
      REQUIRE(per_model.size() == 5u);
      for (auto& [m, n] : per_model) CHECK(n == c_l / 5);
    }
  }
}

TEST_CASE("auto picks latin only for shefl and only when C_l mod M == 0") {
  CHECK(*ResolvePermutationForm("auto", "shefl", 10, 5) == PermutationForm::kLatin);
  CHECK(*ResolvePermutationForm("auto", "shefl", 7, 5) == PermutationForm::kShuffle);
  // Fed-ensemble's own Algorithm 1 draws independent row shuffles.
  CHECK(*ResolvePermutationForm("auto", "fedensemble", 10, 5) ==
        PermutationForm::kShuffle);
  CHECK(*ResolvePermutationForm("latin", "fedensemble", 10, 5) ==
        PermutationForm::kLatin);
  CHECK(*ResolvePermutationForm("shuffle", "shefl", 10, 5) ==
        PermutationForm::kShuffle);
  CHECK_FALSE(ResolvePermutationForm("zigzag", "shefl", 7, 5).ok());
}

TEST_CASE("over one period every LPC cluster meets every model once") {
  for (const char* form : {"latin", "shuffle"}) {
    for (int64_t c_l : {5, 7, 10}) {
      auto s = Scheduler::Create(PaperLike(c_l, 5, form), 1000);
      REQUIRE(s.ok());
      const Clusters& cl = s->clusters();
      for (int64_t period = 0; period < 4; ++period) {
        // cluster -> models it trained during this period
        std::map<int64_t, std::multiset<int64_t>> seen;
        for (int64_t t = period * 5; t < period * 5 + 5; ++t) {
          for (const ClientTask& task : s->Plan(t).tasks) {
            if (task.tier != Tier::kLpc) continue;
            for (size_t c = 0; c < cl.members.size(); ++c) {
              const auto& m = cl.members[c];
              if (std::binary_search(m.begin(), m.end(), task.client_id))
                seen[c].insert(task.models[0]);
            }
          }
        }
        INFO(form << " C_l=" << c_l << " period " << period);
        REQUIRE(seen.size() == static_cast<size_t>(c_l));
        for (auto& [c, models] : seen)
          CHECK(models == std::multiset<int64_t>{0, 1, 2, 3, 4});
      }
    }
  }
}

TEST_CASE("latin rows are cyclic shifts of one permutation") {
  PermutationMatrix p = MakePermutation(PermutationForm::kLatin, 10, 5, 3, 0);
  REQUIRE(p.rows.size() == 10u);
  const auto& r0 = p.rows[0];
  for (const auto& row : p.rows) {
    bool is_shift = false;
    for (int s = 0; s < 5 && !is_shift; ++s) {
      bool ok = true;
      for (int j = 0; j < 5; ++j) ok = ok && row[j] == r0[(j + s) % 5];
      is_shift = ok;
    }
    CHECK(is_shift);
  }
  // A new period draws a new matrix.
  PermutationMatrix q = MakePermutation(PermutationForm::kLatin, 10, 5, 3, 1);
  PermutationMatrix q2 = MakePermutation(PermutationForm::kLatin, 10, 5, 3, 2);
  CHECK((q.rows != p.rows || q2.rows != p.rows));
}

TEST_CASE("k_h = ceil((r/M) * rho * d), capped at d") {
  const int64_t d = 582026;
  CHECK(KForDensity(d, 0.1) == 58203);
  CHECK(KForHpc(d, 0.1, 5, 5) == KForDensity(d, 0.1));
  CHECK(KForHpc(d, 0.1, 1, 5) ==
        static_cast<int64_t>(std::ceil(0.1 * d / 5.0)));
  CHECK(KForHpc(d, 0.1, 20, 5) == static_cast<int64_t>(std::ceil(0.4 * d)));
  CHECK(KForHpc(d, 0.5, 25, 5) == d);  // capped
  CHECK(KForDensity(d, 1.0) == d);
  // The scheduler never budgets 0 elements.
  ExperimentConfig tiny = PaperLike(5, 5, "auto");
  tiny.compression.density = 1e-6;
  auto s = Scheduler::Create(tiny, 10);
  REQUIRE(s.ok());
  for (const ClientTask& t : s->Plan(0).tasks)
    for (int64_t k : t.k) CHECK(k == 1);
}

TEST_CASE("HPCs train all M models with k_h, LPCs one with k_l") {
  ExperimentConfig c = PaperLike(5, 5, "auto");
  c.compression.resource_ratio = 1;
  auto s = Scheduler::Create(c, 582026);
  REQUIRE(s.ok());
  RoundPlan plan = s->Plan(3);
  CHECK(plan.num_hpc == 5);
  CHECK(plan.num_lpc == 5);
  for (const ClientTask& t : plan.tasks) {
    if (t.tier == Tier::kHpc) {
      CHECK(t.models == std::vector<int64_t>{0, 1, 2, 3, 4});
      CHECK(t.k == std::vector<int64_t>(5, KForHpc(582026, 0.1, 1, 5)));
      CHECK(t.client_id < 50);
    } else {
      CHECK(t.models.size() == 1u);
      CHECK(t.k == std::vector<int64_t>{KForDensity(582026, 0.1)});
      CHECK(t.client_id >= 50);
    }
  }
}

TEST_CASE("clusters partition the clients and the cohort takes one of each") {
  ExperimentConfig c = PaperLike(5, 5, "auto");
  Clusters cl = MakeClusters(c.clients, true, c.seed);
  REQUIRE(cl.members.size() == 10u);
  std::set<int64_t> all;
  for (size_t i = 0; i < cl.members.size(); ++i) {
    CHECK(cl.members[i].size() == 10u);
    for (int64_t id : cl.members[i]) {
      CHECK(all.insert(id).second);
      CHECK((id < 50) == (cl.tier[i] == Tier::kHpc));
    }
  }
  CHECK(all.size() == 100u);
  auto a = SampleCohort(c.clients, cl, true, c.seed, 4);
  auto b = SampleCohort(c.clients, cl, true, c.seed, 4);
  auto other = SampleCohort(c.clients, cl, true, c.seed, 5);
  REQUIRE(a.size() == 10u);
  bool differs = false;
  std::set<int64_t> clusters, hpc_clusters;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].client_id == b[i].client_id);
    REQUIRE(a[i].cluster >= 0);
    REQUIRE(a[i].cluster < static_cast<int64_t>(cl.members.size()));
    const auto& m = cl.members[a[i].cluster];
    CHECK(std::binary_search(m.begin(), m.end(), a[i].client_id));
    clusters.insert(a[i].cluster);
    if (cl.tier[a[i].cluster] == Tier::kHpc) hpc_clusters.insert(a[i].cluster);
    CHECK(a[i].tier == cl.tier[a[i].cluster]);
    differs = differs || a[i].client_id != other[i].client_id;
  }
  // One client from each of the C clusters, C_h of them HPC clusters.
  CHECK(clusters.size() == 10u);
  CHECK(hpc_clusters.size() == 5u);
  CHECK(differs);
}

TEST_CASE("uniform sampling and over-selection") {
  ExperimentConfig c = PaperLike(5, 5, "auto");
  c.clients.sampling = "uniform";
  c.clients.over_selection = 0.3;  // ceil(10 * 1.3) = 13
  Clusters cl = MakeClusters(c.clients, true, c.seed);
  auto cohort = SampleCohort(c.clients, cl, true, c.seed, 0);
  REQUIRE(cohort.size() == 13u);
  std::set<int64_t> ids;
  int hpc = 0, extras = 0;
  for (const auto& m : cohort) {
    ids.insert(m.client_id);
    hpc += m.tier == Tier::kHpc;
    extras += m.extra;
  }
  CHECK(ids.size() == 13u);
  CHECK(hpc == 5);
  CHECK(extras == 3);
}

TEST_CASE("baselines assign without tiers: every client trains one model") {
  ExperimentConfig c = PaperLike(5, 5, "latin");
  c.method = "fedensemble";
  auto s = Scheduler::Create(c, 100);
  REQUIRE(s.ok());
  CHECK(s->form() == PermutationForm::kLatin);  // asked for explicitly
  RoundPlan plan = s->Plan(0);
  CHECK(plan.tasks.size() == 10u);
  std::map<int64_t, int> per_model;
  for (const ClientTask& t : plan.tasks) {
    // The tier is the client's own (ids below num_hpc), for its epochs.
    CHECK(t.tier == ClientTier(c.clients, t.client_id));
    REQUIRE(t.models.size() == 1u);
    CHECK(t.k == std::vector<int64_t>{KForDensity(100, 0.1)});
    per_model[t.models[0]]++;
  }
  CHECK(plan.num_hpc + plan.num_lpc == 10);
  // 10 rows, M = 5: latin gives each model 2 clients.
  for (auto& [m, n] : per_model) CHECK(n == 2);
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

TEST_CASE("only connected clients are sampled") {
  for (const std::string sampling : {"clustered", "uniform"}) {
    INFO(sampling);
    ExperimentConfig c = PaperLike(5, 5, "auto");
    c.clients.sampling = sampling;
    c.clients.over_selection = 0.2;
    Clusters cl = MakeClusters(c.clients, true, c.seed);
    // Everyone available: exactly the unfiltered draw.
    for (int64_t t = 0; t < 5; ++t) {
      auto plain = SampleCohort(c.clients, cl, true, c.seed, t);
      auto all = SampleCohort(c.clients, cl, true, c.seed, t,
                              [](int64_t) { return true; });
      REQUIRE(plain.size() == all.size());
      for (size_t i = 0; i < plain.size(); ++i)
        CHECK(plain[i].client_id == all[i].client_id);
    }
    // Clients 0-29 gone (a daemon died): never drawn, and the cohort takes
    // what is left.
    auto alive = [](int64_t id) { return id >= 30; };
    for (int64_t t = 0; t < 20; ++t)
      for (const auto& m : SampleCohort(c.clients, cl, true, c.seed, t, alive))
        CHECK(m.client_id >= 30);
    // Nobody connected: an empty cohort, not a crash.
    CHECK(SampleCohort(c.clients, cl, true, c.seed, 0,
                       [](int64_t) { return false; })
              .empty());
  }
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

TEST_CASE("100,000 clients: the O(C) draw equals the filtered one") {
  // With no filter the uniform draw and the extras come from pools that
  // are never built (common/fed/schedule.cc); a filter accepting everyone
  // builds them. The cohorts must be the same, tiered or not.
  for (const std::string sampling : {"uniform", "clustered"}) {
    for (bool tiered : {true, false}) {
      INFO(sampling << " tiered " << tiered);
      ExperimentConfig c = PaperLike(900, 5, "auto");
      c.clients.num_clients = 100000;
      c.clients.num_hpc = 10000;
      c.clients.per_round_hpc = 100;
      c.clients.sampling = sampling;
      c.clients.over_selection = 0.1;
      const Clusters cl = MakeClusters(c.clients, tiered, c.seed);
      for (int64_t t = 0; t < 3; ++t) {
        const auto fast = SampleCohort(c.clients, cl, tiered, c.seed, t);
        const auto slow = SampleCohort(c.clients, cl, tiered, c.seed, t,
                                       [](int64_t) { return true; });
        REQUIRE(fast.size() == 1100u);
        REQUIRE(slow.size() == fast.size());
        std::set<int64_t> distinct;
        for (size_t i = 0; i < fast.size(); ++i) {
          REQUIRE(fast[i].client_id == slow[i].client_id);
          CHECK(fast[i].extra == slow[i].extra);
          distinct.insert(fast[i].client_id);
        }
        CHECK(distinct.size() == fast.size());
      }
    }
  }
}

}  // namespace
}  // namespace shefl
