// What the coordinator puts in the tasks it pushes, round by round, read
// off the task feed of a real coordinator by the test acting as its daemon:
// the decayed learning rate (the wiring, not only RoundLearningRate's
// formula), HPC and LPC epochs, batch size and FedProx's mu.
#include "tests/coordinator_harness.h"  // first: see its comment

#include <cmath>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Rounds close at a short deadline: the test uploads nothing.
// The test answers no task, so every round runs to its deadline: strikes
// against stallers would bench the clients it expects tasks for.
constexpr const char* kSettings =
    "round_deadline_s: 0.5\n"
    "rounds: 5\n"
    "eval:\n"
    "  every: 100\n"
    "clients:\n"
    "  staller_strikes: 0\n";

TEST_CASE("tasks carry the learning rate decayed for their round") {
  Harness h(std::string(kSettings) +
            "train:\n"
            "  lr: 0.1\n"
            "  lr_decay: 0.5\n"
            "  lr_decay_every: 2\n"
            "  local_epochs: 2\n"
            "  hpc_local_epochs: 7\n"
            "  batch_size: 24\n"
            "  local_steps: 3\n");
  for (int round = 1; round <= 5; ++round) {
    const auto tasks = h.NextTasks();
    REQUIRE(tasks.size() == 5u);
    // lr * decay^floor((round - 1) / every): 0.1, 0.1, 0.05, 0.05, 0.025.
    const double lr = 0.1 * std::pow(0.5, (round - 1) / 2);
    int hpc = 0;
    for (const auto& t : tasks) {
      INFO("round " << round << " client " << t.client_id());
      CHECK(t.round() == round);
      CHECK(t.train().lr() == Approx(lr).epsilon(1e-12));
      CHECK(t.train().batch_size() == 24);
      CHECK(t.train().local_steps() == 3);
      CHECK(t.train().prox_mu() == 0);
      const bool is_hpc = h.IsHpc(t.client_id());
      hpc += is_hpc;
      CHECK(t.models_size() == (is_hpc ? 3 : 1));  // HPCs train all M
      CHECK(t.train().local_epochs() == (is_hpc ? 7 : 2));
    }
    CHECK(hpc == 2);
  }
}

TEST_CASE("FedProx tasks carry mu and every client trains the one model") {
  Harness h(std::string(kSettings) +
            "method: fedprox\n"
            "model:\n"
            "  num_models: 1\n"
            "train:\n"
            "  prox_mu: 0.25\n"
            "  hpc_local_epochs: 7\n");
  int hpc = 0;
  for (int round = 1; round <= 2; ++round) {
    const auto tasks = h.NextTasks();
    REQUIRE(tasks.size() == 5u);
    for (const auto& t : tasks) {
      INFO("round " << round << " client " << t.client_id());
      CHECK(t.train().prox_mu() == Approx(0.25));
      REQUIRE(t.models_size() == 1);
      CHECK(t.models(0).model_id() == 0);
      // Tiers come from the client id under every method: an HPC trains
      // FedProx's one model for hpc_local_epochs (000's Figure 7).
      const bool is_hpc = h.IsHpc(t.client_id());
      hpc += is_hpc;
      CHECK(t.train().local_epochs() == (is_hpc ? 7 : 1));
    }
  }
  CHECK(hpc > 0);  // the check above saw both tiers
  CHECK(hpc < 10);
}

TEST_CASE("FedProx tasks carry the default mu of 0.01 when none is set") {
  Harness h(std::string(kSettings) +
            "method: fedprox\n"
            "model:\n"
            "  num_models: 1\n");
  const auto tasks = h.NextTasks();
  REQUIRE(tasks.size() == 5u);
  for (const auto& t : tasks) {
    INFO("client " << t.client_id());
    CHECK(t.train().prox_mu() == Approx(0.01));
  }
}

}  // namespace
}  // namespace shefl
