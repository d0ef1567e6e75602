// RoundState's completion rule: a pair counts only once its handler booked
// the reply, so rounds.jsonl never misses a reply that lands after the
// round's line was written (seen as a flake of runtime_test under load).
#include "server/state/round_state.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using Clock = RoundState::Clock;

RoundPlan OneHpcTwoModels() {
  RoundPlan plan;
  plan.round = 1;
  plan.num_hpc = 1;
  plan.tasks.push_back(ClientTask{7, Tier::kHpc, {0, 1}, {2, 2}});
  return plan;
}

RoundState MakeRound(Clock::duration until_deadline) {
  return RoundState(1, OneHpcTwoModels(), {0, 0}, /*dim=*/4,
                    AggregationConfig{}, /*num_models=*/2,
                    Clock::now() + until_deadline);
}

SparseDelta Delta() { return SparseDelta{4, {0, 3}, {1.0f, -1.0f}}; }

TEST_CASE("a round is complete only when every accepted update was replied to",
          "[round_state]") {
  std::atomic<bool> stop{false};
  {
    RoundState r = MakeRound(std::chrono::milliseconds(300));
    REQUIRE(r.Accept(7, 0, 1.0, Delta()).ok());
    REQUIRE(r.Accept(7, 1, 1.0, Delta()).ok());
    r.Replied(7, 0);
    CHECK(r.accepted() == 2);
    // One reply is still being booked: the wait runs to the deadline.
    CHECK_FALSE(r.WaitComplete(stop));
  }
  {
    RoundState r = MakeRound(std::chrono::seconds(60));
    REQUIRE(r.Accept(7, 0, 1.0, Delta()).ok());
    REQUIRE(r.Accept(7, 1, 1.0, Delta()).ok());
    r.Replied(7, 0);
    r.Replied(7, 0);  // a second reply of one pair counts once
    r.Replied(7, 1);
    const auto start = Clock::now();
    CHECK(r.WaitComplete(stop));
    CHECK(Clock::now() - start < std::chrono::seconds(30));
  }
}

TEST_CASE("with over-selection the first C clients close the round",
          "[round_state]") {
  RoundPlan plan = OneHpcTwoModels();
  plan.tasks.push_back(ClientTask{8, Tier::kLpc, {0}, {2}});
  plan.tasks.push_back(ClientTask{9, Tier::kLpc, {1}, {2}});
  plan.num_lpc = 2;
  plan.needed = 2;  // C = 2 of the 3 sampled
  std::atomic<bool> stop{false};
  RoundState r(1, plan, {0, 0}, 4, AggregationConfig{}, 2,
               Clock::now() + std::chrono::milliseconds(300));
  // Client 7 half done and client 8 done: one client complete, not two.
  REQUIRE(r.Accept(7, 0, 1.0, Delta()).ok());
  r.Replied(7, 0);
  REQUIRE(r.Accept(8, 0, 1.0, Delta()).ok());
  r.Replied(8, 0);
  CHECK_FALSE(r.WaitComplete(stop));

  RoundState r2(1, plan, {0, 0}, 4, AggregationConfig{}, 2,
                Clock::now() + std::chrono::seconds(60));
  REQUIRE(r2.Accept(8, 0, 1.0, Delta()).ok());
  r2.Replied(8, 0);
  REQUIRE(r2.Accept(9, 1, 1.0, Delta()).ok());
  r2.Replied(9, 1);
  CHECK(r2.WaitComplete(stop));  // client 7 (the slowest) is not waited for
  r2.Close();
  CHECK(IsLate(r2.Accept(7, 0, 1.0, Delta())));
}

TEST_CASE("closing a round waits for the replies of accepted updates",
          "[round_state]") {
  RoundState r = MakeRound(std::chrono::seconds(60));
  REQUIRE(r.Accept(7, 0, 1.0, Delta()).ok());
  std::atomic<bool> booked{false};
  std::thread handler([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    booked = true;  // stands for the handler booking its reply
    r.Replied(7, 0);
  });
  r.Close();
  CHECK(booked.load());
  handler.join();
  // After the close an update is late and nothing more is kept.
  const absl::Status late = r.Accept(7, 1, 1.0, Delta());
  CHECK(IsLate(late));
  CHECK(r.accepted() == 1);
}

TEST_CASE("a client given up no longer holds the round, and its late update still counts",
          "[round_state]") {
  RoundPlan plan = OneHpcTwoModels();
  plan.tasks.push_back(ClientTask{8, Tier::kLpc, {0}, {2}});
  plan.num_lpc = 1;
  std::atomic<bool> stop{false};
  RoundState r(1, plan, {0, 0}, 4, AggregationConfig{}, 2,
               Clock::now() + std::chrono::seconds(60));
  REQUIRE(r.Accept(8, 0, 1.0, Delta()).ok());
  r.Replied(8, 0);
  CHECK(r.waiting_clients() == std::vector<int64_t>{7});
  // The wait ends at `until` while client 7 is still owed.
  CHECK_FALSE(r.WaitComplete(stop, Clock::now() + std::chrono::milliseconds(200)));
  CHECK(r.Abandon(8) == 0);  // nothing of 8 is pending
  CHECK(r.Abandon(7) == 2);
  CHECK(r.Abandon(7) == 0);
  const auto start = Clock::now();
  CHECK(r.WaitComplete(stop, Clock::now() + std::chrono::seconds(30)));
  CHECK(Clock::now() - start < std::chrono::seconds(10));
  CHECK(r.waiting_clients().empty());
  CHECK(r.abandoned_clients() == std::vector<int64_t>{7});
  // An update of a client given up that arrives before the close counts.
  REQUIRE(r.Accept(7, 1, 1.0, Delta()).ok());
  r.Replied(7, 1);
  CHECK(r.accepted() == 2);
  CHECK(r.silent_clients().empty());
}

TEST_CASE("with over-selection, giving up on clients closes the round with those left",
          "[round_state]") {
  RoundPlan plan = OneHpcTwoModels();
  plan.tasks.push_back(ClientTask{8, Tier::kLpc, {0}, {2}});
  plan.tasks.push_back(ClientTask{9, Tier::kLpc, {1}, {2}});
  plan.num_lpc = 2;
  plan.needed = 2;
  std::atomic<bool> stop{false};
  RoundState r(1, plan, {0, 0}, 4, AggregationConfig{}, 2,
               Clock::now() + std::chrono::seconds(60));
  REQUIRE(r.Accept(8, 0, 1.0, Delta()).ok());
  r.Replied(8, 0);
  r.Abandon(9);
  // One client done of the 2 needed, and 7 still owed: not complete.
  CHECK_FALSE(r.WaitComplete(stop, Clock::now() + std::chrono::milliseconds(200)));
  r.Abandon(7);  // nothing left to wait for
  CHECK(r.WaitComplete(stop, Clock::now() + std::chrono::seconds(30)));
  CHECK(r.completed_clients() == std::vector<int64_t>{8});
}

}  // namespace
}  // namespace shefl
