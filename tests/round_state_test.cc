// RoundState's completion rule: a pair counts only once its handler booked
// the reply, so rounds.jsonl never misses a reply that lands after the
// round's line was written (seen as a flake of runtime_test under load).
#include <atomic>
#include <chrono>
#include <thread>

#include "server/round_state.h"

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
    r.Replied();
    CHECK(r.accepted() == 2);
    // One reply is still being booked: the wait runs to the deadline.
    CHECK_FALSE(r.WaitComplete(stop));
  }
  {
    RoundState r = MakeRound(std::chrono::seconds(60));
    REQUIRE(r.Accept(7, 0, 1.0, Delta()).ok());
    REQUIRE(r.Accept(7, 1, 1.0, Delta()).ok());
    r.Replied();
    r.Replied();
    const auto start = Clock::now();
    CHECK(r.WaitComplete(stop));
    CHECK(Clock::now() - start < std::chrono::seconds(30));
  }
}

TEST_CASE("closing a round waits for the replies of accepted updates",
          "[round_state]") {
  RoundState r = MakeRound(std::chrono::seconds(60));
  REQUIRE(r.Accept(7, 0, 1.0, Delta()).ok());
  std::atomic<bool> booked{false};
  std::thread handler([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    booked = true;  // stands for the handler booking its reply
    r.Replied();
  });
  r.Close();
  CHECK(booked.load());
  handler.join();
  // After the close an update is late and nothing more is kept.
  const absl::Status late = r.Accept(7, 1, 1.0, Delta());
  CHECK(IsLate(late));
  CHECK(r.accepted() == 1);
}

}  // namespace
}  // namespace shefl
