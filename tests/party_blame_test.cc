// Blame for corrupt secure sums by group testing (server/state/
// party_blame.h): a liar singled out by a corrupt session whose other
// parties were seen clean is benched the round after, and named; an honest
// party that only sat beside the liar is not; nobody is benched in honest
// runs; over random cohorts a liar among ten daemons is benched within a
// few rounds and no honest daemon ever is; a bench of N rounds runs out.
#include "server/state/party_blame.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

std::string D(int i) { return "d" + std::to_string(i); }

TEST_CASE("a liar singled out by a clean session is benched and named") {
  PartyBlame blame(5, 0);
  blame.Record(1, {"d1", "d2", "d3"}, false);
  blame.Record(1, {"d0", "d1", "d2"}, true);
  CHECK(blame.Decide(1) == std::vector<std::string>{"d0"});
  CHECK_FALSE(blame.Benched("d0", 1));  // this round already ran
  CHECK(blame.Benched("d0", 2));
  CHECK(blame.Benched("d0", 1000));  // bench_rounds 0: the rest of the run
  CHECK_FALSE(blame.Benched("d1", 2));
  const nlohmann::json j = blame.ToJson();
  REQUIRE(j.size() == 1);
  CHECK(j[0]["daemon"] == "d0");
  CHECK(j[0]["round"] == 1);
  CHECK(j[0]["corrupt_sessions"] == 1);
  CHECK(j[0]["through"].is_null());
  // Decided once: the same evidence benches nobody new.
  CHECK(blame.Decide(2).empty());
}

TEST_CASE("two uncleared parties of a corrupt session: nobody on suspicion") {
  PartyBlame blame(5, 0);
  blame.Record(1, {"d0", "d1", "d2"}, true);  // d0 lies, d1 always beside it
  blame.Record(1, {"d2", "d3", "d4"}, false);
  blame.Record(2, {"d0", "d1", "d3"}, true);
  CHECK(blame.Decide(2).empty());
  // The cohort draws them apart: d1 is seen clean, d0 is singled out.
  blame.Record(3, {"d1", "d3", "d4"}, false);
  blame.Record(3, {"d0", "d2", "d4"}, true);
  CHECK(blame.Decide(3) == std::vector<std::string>{"d0"});
  CHECK_FALSE(blame.Benched("d1", 4));
}

TEST_CASE("clean sessions older than the window clear nobody") {
  PartyBlame blame(2, 0);
  blame.Record(1, {"d1", "d2"}, false);
  CHECK(blame.Decide(1).empty());
  blame.Record(4, {"d0", "d1", "d2"}, true);
  CHECK(blame.Decide(4).empty());  // d1, d2 last seen clean in round 1
}

TEST_CASE("a bench of N rounds runs out, and old evidence is not used again") {
  PartyBlame blame(10, 3);
  blame.Record(1, {"d1"}, false);
  blame.Record(1, {"d0", "d1"}, true);
  CHECK(blame.Decide(1) == std::vector<std::string>{"d0"});
  for (int64_t r = 2; r <= 4; ++r) CHECK(blame.Benched("d0", r));
  CHECK_FALSE(blame.Benched("d0", 5));
  for (int64_t r = 2; r <= 5; ++r) CHECK(blame.Decide(r).empty());
  CHECK(blame.ToJson()[0]["through"] == 4);
  // Back and lying again: benched again.
  blame.Record(6, {"d0", "d1"}, true);
  CHECK(blame.Decide(6) == std::vector<std::string>{"d0"});
}

// Ten daemons; each round each of two models draws a session of 3-6 of
// the daemons not benched. `liar` (or -1) corrupts every session it is in.
struct Simulation {
  int benched_round = -1;
  std::vector<std::string> honest_benched;
};
Simulation Simulate(int liar, int rounds, uint64_t seed) {
  PartyBlame blame(5, 0);
  std::mt19937_64 rng(seed);
  Simulation out;
  for (int r = 1; r <= rounds; ++r) {
    std::vector<int> pool;
    for (int d = 0; d < 10; ++d)
      if (!blame.Benched(D(d), r)) pool.push_back(d);
    for (int m = 0; m < 2; ++m) {
      std::shuffle(pool.begin(), pool.end(), rng);
      const size_t n = std::min(pool.size(), size_t{3} + rng() % 4);
      std::vector<std::string> parties;
      bool corrupt = false;
      for (size_t i = 0; i < n; ++i) {
        parties.push_back(D(pool[i]));
        corrupt = corrupt || pool[i] == liar;
      }
      blame.Record(r, parties, corrupt);
    }
    for (const std::string& d : blame.Decide(r)) {
      if (d == D(liar)) {
        out.benched_round = r;
      } else {
        out.honest_benched.push_back(d);
      }
    }
  }
  return out;
}

TEST_CASE("honest runs bench nobody over 50 rounds") {
  for (uint64_t seed = 1; seed <= 20; ++seed)
    CHECK(Simulate(-1, 50, seed).honest_benched.empty());
}

TEST_CASE("one liar in ten is benched within 5 rounds, no honest daemon ever") {
  int within5 = 0;
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    const Simulation s = Simulate(3, 50, seed);
    INFO("seed " << seed);
    CHECK(s.honest_benched.empty());
    CHECK(s.benched_round > 0);
    within5 += s.benched_round > 0 && s.benched_round <= 5 ? 1 : 0;
  }
  CHECK(within5 >= 190);  // 95% of cohort draws
}

}  // namespace
}  // namespace shefl
