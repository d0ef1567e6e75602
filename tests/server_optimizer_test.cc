// Server optimisers (common/fed/server_optimizer.h): FedAvgM's momentum and
// FedAdam's moments by hand, state that survives a save and load, and
// refusals of a state from another round or shape. No LibTorch.
#include "common/fed/server_optimizer.h"

#include <cmath>
#include <fstream>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

AggregationConfig Cfg(const std::string& kind) {
  AggregationConfig c;
  c.server_optimizer = kind;
  return c;
}

TEST_CASE("none adds the step, momentum carries v = mu v + delta") {
  auto none = ServerOptimizer::Create(Cfg("none"), 1, 2);
  REQUIRE(none.ok());
  CHECK_FALSE(none->active());
  auto o = ServerOptimizer::Create(Cfg("momentum"), 2, 2);
  REQUIRE(o.ok());
  CHECK(o->active());
  std::vector<float> w = {1, 1};
  o->Step(0, {0.5f, -1}, &w);  // v = (0.5, -1)
  CHECK(w == std::vector<float>{1.5f, 0});
  o->Step(0, {0.5f, 0}, &w);   // v = (0.95, -0.9)
  CHECK(w[0] == Approx(2.45f));
  CHECK(w[1] == Approx(-0.9f));
  std::vector<float> other = {0, 0};
  o->Step(1, {1, 1}, &other);  // member 1 has its own v
  CHECK(other == std::vector<float>{1, 1});
}

TEST_CASE("adam normalises the step by the second moment") {
  AggregationConfig c = Cfg("adam");
  c.server_lr = 0.1;
  c.server_momentum = 0.9;
  c.server_beta2 = 0.99;
  c.server_epsilon = 1e-3;
  auto o = ServerOptimizer::Create(c, 1, 1);
  REQUIRE(o.ok());
  std::vector<float> w = {0};
  o->Step(0, {0.1f * 2.0f}, &w);  // g = 2: m = 0.2, v = 0.04
  CHECK(w[0] == Approx(0.1 * 0.2 / (0.2 + 1e-3)).epsilon(1e-5));
}

TEST_CASE("the state survives a save and load, another round is refused") {
  shefl::testing::TempDir dir;
  const std::string path = dir / "opt.bin";
  auto a = ServerOptimizer::Create(Cfg("adam"), 2, 3);
  REQUIRE(a.ok());
  std::vector<float> w1 = {1, 2, 3}, w2 = w1;
  a->Step(1, {0.1f, -0.2f, 0.3f}, &w1);
  REQUIRE(a->Save(path, 7).ok());
  auto b = ServerOptimizer::Create(Cfg("adam"), 2, 3);
  REQUIRE(b.ok());
  REQUIRE(b->Load(path, 7).ok());
  // The same next step from the same state.
  std::vector<float> x = w1, y = w1;
  a->Step(1, {0.2f, 0.2f, 0.2f}, &x);
  b->Step(1, {0.2f, 0.2f, 0.2f}, &y);
  CHECK(x == y);
  auto c = ServerOptimizer::Create(Cfg("adam"), 2, 3);
  const absl::Status wrong_round = c->Load(path, 8);
  CHECK(wrong_round.code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(wrong_round.message()).find("round 7") != std::string::npos);
  auto d = ServerOptimizer::Create(Cfg("momentum"), 2, 3);
  CHECK(d->Load(path, 7).code() == absl::StatusCode::kDataLoss);
  CHECK(d->Load(dir / "missing.bin", 7).code() == absl::StatusCode::kNotFound);
  std::ofstream(dir / "short.bin") << "SHEFLOP1";
  CHECK(d->Load(dir / "short.bin", 7).code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("an unknown optimiser is refused naming the key") {
  auto o = ServerOptimizer::Create(Cfg("yogi"), 1, 1);
  REQUIRE_FALSE(o.ok());
  CHECK(std::string(o.status().message())
            .find("aggregation.server_optimizer': 'yogi'") != std::string::npos);
}

}  // namespace
}  // namespace shefl
