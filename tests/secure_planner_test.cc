// The coordinator's plan of each model's secure-aggregation session
// (server/source/secure_planner.h), on a state built by hand: four daemons
// registered in the registry with their clients' shard sizes reported, and
// a round plan of seven tasks over three models. What the plan holds is
// read where the daemons see it: the setup each party is sent when its
// session starts (its id, its clients' public weights, the support C_t).
#include "server/source/secure_planner.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/core/config.h"
#include "common/fed/schedule.h"
#include "common/sparse/index_set_codec.h"
#include "server/run/model_store.h"
#include "server/shared/coordinator_state.h"
#include "server/state/client_registry.h"
#include "shefl.pb.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr uint64_t kDim = 40;

ExperimentConfig Config(int64_t min_parties) {
  ExperimentConfig c;
  c.seed = 11;
  c.model.num_models = 3;
  c.clients.num_clients = 8;
  c.aggregation.rule = "workload_aware";
  c.aggregation.weight_by_samples = true;
  c.aggregation.hpc_share = 0.6;
  c.aggregation.robust = false;  // shard sizes as claimed
  c.aggregation.secure = "common_support";
  c.secure.min_parties = min_parties;
  c.secure.scale_bits = 20;
  c.secure.clip = 0.5;
  return c;
}

// Daemons a {1, 4}, b {2, 5}, c {3} and d {0, 6}, each client's shard
// size reported.
std::unique_ptr<CoordinatorState> State(const ExperimentConfig& c) {
  std::vector<std::vector<float>> models(c.model.num_models,
                                         std::vector<float>(kDim, 0.25f));
  auto state = std::make_unique<CoordinatorState>(
      c, std::make_unique<ModelStore>(std::move(models)));
  const std::map<int64_t, uint64_t> shard = {{0, 100}, {1, 300}, {2, 100},
                                             {3, 200}, {4, 50},  {5, 150},
                                             {6, 250}};
  const std::map<std::string, std::vector<int64_t>> daemons = {
      {"a", {1, 4}}, {"b", {2, 5}}, {"c", {3}}, {"d", {0, 6}}};
  for (const auto& [name, clients] : daemons) {
    v1::RegisterRequest req;
    req.set_daemon_name(name);
    for (int64_t id : clients) req.add_clients()->set_client_id(id);
    auto s = state->registry.Register(req, "id-" + name);
    REQUIRE(s.ok());
    for (int64_t id : clients)
      REQUIRE(state->reports.ReportShardSize(**s, id, shard.at(id)).ok());
  }
  return state;
}

// Model 0: HPCs 1 and 2, LPCs 3 and 4 (daemons a, b, c). Model 1: HPCs 1
// and 2 (daemons a, b). Model 2: LPCs 0, 4, 5 and 6 (daemons d, a, b).
RoundPlan Plan(int64_t round) {
  RoundPlan p;
  p.round = round;
  p.tasks = {{0, Tier::kLpc, {2}, {2}},
             {1, Tier::kHpc, {0, 1}, {4, 4}},
             {2, Tier::kHpc, {0, 1}, {5, 6}},
             {3, Tier::kLpc, {0}, {3}},
             {4, Tier::kLpc, {0, 2}, {3, 2}},
             {5, Tier::kLpc, {2}, {2}},
             {6, Tier::kLpc, {2}, {2}}};
  p.num_hpc = 2;
  p.num_lpc = 5;
  return p;
}

// Each party's setup once the session starts, by party id.
using Setups = std::map<uint32_t, v1::SecureSetup>;

struct Planned {
  CoordinatorState::SecureSessions sessions;
  std::map<int64_t, Setups> setups;  // by model
};

Planned PlanAndStart(SecurePlanner& planner, int64_t round,
                     const CoordinatorState& state) {
  Planned out;
  std::vector<std::pair<uint32_t, v1::FeedMessage>> sent;
  out.sessions = planner.Plan(
      Plan(round), round, state,
      SecureSession::Clock::now() + std::chrono::seconds(60),
      [&sent](uint32_t party, const v1::FeedMessage& m) {
        sent.emplace_back(party, m);
      });
  CHECK(sent.empty());  // planned, not started
  for (const auto& [model, session] : out.sessions) {
    session->Start();
    for (const auto& [party, m] : sent) {
      REQUIRE(m.has_secure_setup());
      CHECK(m.secure_setup().party() == party);
      CHECK(m.secure_setup().model_id() == model);
      CHECK(out.setups[model].emplace(party, m.secure_setup()).second);
    }
    sent.clear();
  }
  return out;
}

std::vector<uint32_t> Support(const v1::SecureSetup& s) {
  auto support = DecodeIndexSet(s.support(), kDim, kDim);
  REQUIRE(support.ok());
  return *support;
}

std::map<uint32_t, double> Weights(const v1::SecureSetup& s) {
  std::map<uint32_t, double> w;
  for (const v1::SecureWeight& sw : s.weights()) w[sw.client_id()] = sw.weight();
  return w;
}

std::set<uint32_t> Parties(const Setups& s) {
  std::set<uint32_t> ids;
  for (const auto& [party, setup] : s) ids.insert(party);
  return ids;
}

TEST_CASE("the secure planner gives a session to each model with min_parties daemons, a party per daemon") {
  const ExperimentConfig c = Config(3);
  auto state = State(c);
  SecurePlanner planner(c, kDim, "run-1");
  Planned p = PlanAndStart(planner, 3, *state);

  // Model 1 has two daemons, one fewer than secure.min_parties.
  REQUIRE(p.sessions.size() == 2);
  CHECK(p.sessions.count(0) == 1);
  CHECK(p.sessions.count(1) == 0);
  CHECK(p.sessions.count(2) == 1);
  CHECK(p.sessions.at(0)->model() == 0);
  CHECK(p.sessions.at(2)->model() == 2);

  // A party's id is the lowest client its daemon hosts for the model:
  // daemon a is party 1 for model 0 but party 4 for model 2, which its
  // client 1 does not train.
  CHECK(Parties(p.setups[0]) == std::set<uint32_t>{1, 2, 3});
  CHECK(Parties(p.setups[2]) == std::set<uint32_t>{0, 4, 5});
  CHECK(Weights(p.setups[0][1]).size() == 2);  // clients 1 and 4
  CHECK(Weights(p.setups[0][1]).count(4) == 1);
  CHECK(Weights(p.setups[2][0]).size() == 2);  // clients 0 and 6
  CHECK(Weights(p.setups[2][4]).size() == 1);  // client 4 alone

  for (const auto& [model, setups] : p.setups)
    for (const auto& [party, s] : setups) {
      CHECK(s.round() == 3);
      CHECK(s.scale_bits() == 20);
      CHECK(s.clip() == 0.5);
    }

  // One more party needed: model 0's three daemons are too few as well.
  const ExperimentConfig strict = Config(4);
  auto state4 = State(strict);
  SecurePlanner planner4(strict, kDim, "run-1");
  CHECK(PlanAndStart(planner4, 3, *state4).sessions.empty());
  // With two needed, model 1 has its session too.
  const ExperimentConfig loose = Config(2);
  auto state2 = State(loose);
  SecurePlanner planner2(loose, kDim, "run-1");
  CHECK(PlanAndStart(planner2, 3, *state2).sessions.size() == 3);
}

TEST_CASE("each task's public weight is its coefficient in the rule over the largest") {
  const ExperimentConfig c = Config(3);
  auto state = State(c);
  SecurePlanner planner(c, kDim, "run-1");
  Planned p = PlanAndStart(planner, 3, *state);

  // Model 0, workload_aware by samples, beta = 0.6: HPCs 1 (300) and 2
  // (100) share 0.6, LPCs 3 (200) and 4 (50) share 0.4. The coefficients
  // 0.45, 0.15, 0.32, 0.08, over the largest.
  const std::map<uint32_t, double> m0_party1 = Weights(p.setups[0][1]);
  CHECK(m0_party1.at(1) == Approx(1.0).epsilon(1e-12));
  CHECK(m0_party1.at(4) == Approx(0.08 / 0.45).epsilon(1e-12));
  CHECK(Weights(p.setups[0][2]).at(2) == Approx(0.15 / 0.45).epsilon(1e-12));
  CHECK(Weights(p.setups[0][3]).at(3) == Approx(0.32 / 0.45).epsilon(1e-12));

  // Model 2 has LPCs alone (beta = 0): shares 100, 50, 150, 250 of 550.
  const std::map<uint32_t, double> m2_party0 = Weights(p.setups[2][0]);
  CHECK(m2_party0.at(0) == Approx(100.0 / 250).epsilon(1e-12));
  CHECK(m2_party0.at(6) == Approx(1.0).epsilon(1e-12));
  CHECK(Weights(p.setups[2][4]).at(4) == Approx(50.0 / 250).epsilon(1e-12));
  CHECK(Weights(p.setups[2][5]).at(5) == Approx(150.0 / 250).epsilon(1e-12));

  // Public weights are in (0, 1], the largest exactly 1.
  for (const auto& [model, setups] : p.setups) {
    double largest = 0;
    for (const auto& [party, s] : setups)
      for (const auto& [client, w] : Weights(s)) {
        CHECK(w > 0);
        CHECK(w <= 1);
        largest = std::max(largest, w);
      }
    CHECK(largest == 1.0);
  }
}

TEST_CASE("the support is K coordinates fixed by the seed and the round") {
  const ExperimentConfig c = Config(3);
  auto state = State(c);
  SecurePlanner planner(c, kDim, "run-1");
  Planned a = PlanAndStart(planner, 3, *state);

  // K is the largest k of the model's tasks: 5 for model 0, 2 for model 2,
  // and every party of a session gets the same.
  const std::vector<uint32_t> s0 = Support(a.setups[0][1]);
  CHECK(s0.size() == 5);
  CHECK(a.sessions.at(0)->words() == 5);
  CHECK(Support(a.setups[2][0]).size() == 2);
  for (const auto& [party, s] : a.setups[0]) CHECK(Support(s) == s0);

  // The same round again (another planner too) gives the same support;
  // the next round another one.
  SecurePlanner other(c, kDim, "run-2");
  CHECK(Support(PlanAndStart(planner, 3, *state).setups[0][1]) == s0);
  CHECK(Support(PlanAndStart(other, 3, *state).setups[0][1]) == s0);
  const std::vector<uint32_t> s0_next =
      Support(PlanAndStart(planner, 4, *state).setups[0][1]);
  CHECK(s0_next.size() == 5);
  CHECK(s0_next != s0);

  // secure.support_fraction sets K from d instead: 0.25 x 40.
  ExperimentConfig fraction = c;
  fraction.secure.support_fraction = 0.25;
  SecurePlanner by_fraction(fraction, kDim, "run-1");
  Planned f = PlanAndStart(by_fraction, 3, *state);
  CHECK(Support(f.setups[0][1]).size() == 10);
  CHECK(Support(f.setups[2][0]).size() == 10);
  CHECK(f.sessions.at(2)->words() == 10);
  // Another model of the same round draws its own.
  CHECK(Support(f.setups[0][1]) != Support(f.setups[2][0]));
}

TEST_CASE("published updates move the support's top part to the largest accumulated coordinates") {
  const ExperimentConfig c = Config(3);  // accumulator_decay 0.9
  auto state = State(c);
  SecurePlanner planner(c, kDim, "run-1");
  SecurePlanner fresh(c, kDim, "run-1");
  const std::vector<float> before(kDim, 0.25f);

  // Round 3 published model 0 moving at 7, 13, 21 and 30 by 1: they are
  // the support's top part (K = 5: 4 from the accumulator, 1 drawn).
  std::vector<float> after = before;
  for (uint32_t i : {7u, 13u, 21u, 30u}) after[i] += 1.0f;
  planner.Published(0, before, after);
  std::vector<uint32_t> s = Support(PlanAndStart(planner, 4, *state).setups[0][1]);
  REQUIRE(s.size() == 5);
  for (uint32_t i : {7u, 13u, 21u, 30u})
    CHECK(std::count(s.begin(), s.end(), i) == 1);

  // Round 4 moved 2, 3, 11 and 38 by -0.95: |A| is 0.95 there against
  // 0.9 x 1 at the first four, so they take the top part. Without the
  // decay the first four would keep it.
  after = before;
  for (uint32_t i : {2u, 3u, 11u, 38u}) after[i] -= 0.95f;
  planner.Published(0, before, after);
  s = Support(PlanAndStart(planner, 5, *state).setups[0][1]);
  REQUIRE(s.size() == 5);
  for (uint32_t i : {2u, 3u, 11u, 38u})
    CHECK(std::count(s.begin(), s.end(), i) == 1);
  int old = 0;
  for (uint32_t i : {7u, 13u, 21u, 30u}) old += std::count(s.begin(), s.end(), i);
  CHECK(old <= 1);  // at most the one drawn coordinate

  // Each model has its own accumulator: model 2's support is what a
  // planner that published nothing gives.
  CHECK(Support(PlanAndStart(planner, 5, *state).setups[2][0]) ==
        Support(PlanAndStart(fresh, 5, *state).setups[2][0]));
  CHECK(Support(PlanAndStart(fresh, 5, *state).setups[0][1]) != s);
}

}  // namespace
}  // namespace shefl
