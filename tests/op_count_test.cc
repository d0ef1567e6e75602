// OpCounter (common/learn/op_counter.h) counts ATen ops exactly, nested
// ones apart; and a round's tasks trained as one stack (CohortTrain)
// launch far fewer ops per member-step than the same tasks trained one
// after another (LocalTrain): the figure bench/op_count_bench prints at
// the paper round's real mix, held here loosely on a small one.
#include <ATen/Functions.h>
#include <ATen/record_function.h>

#include <string>
#include <utility>
#include <vector>

#include "common/fed/config_load.h"
#include "common/fed/fens_split.h"
#include "common/fed/schedule.h"
#include "common/learn/flat_state.h"
#include "common/learn/op_counter.h"
#include "common/learn/train.h"
#include "common/learn_stacked/cohort_train.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("OpCounter counts top-level and nested ops while it lives") {
  const at::Tensor a = at::ones({4, 3});
  const at::Tensor w = at::ones({2, 3});
  const at::Tensor b = at::zeros({2});
  OpCounts first;
  {
    OpCounter counter;
    for (int i = 0; i < 7; ++i) at::add(a, a);
    first = counter.counts();
    CHECK(first.top_level == 7);
    CHECK(first.all == 7);  // add calls no other op
    at::linear(a, w, b);  // composite: t() and addmm inside
    const OpCounts after = counter.counts();
    CHECK(after.top_level == 8);
    CHECK(after.all - first.all >= 3);
    counter.Stop();
    at::add(a, a);
    CHECK(counter.counts().top_level == 8);  // stopped: frozen
  }
  CHECK_FALSE(at::hasGlobalCallbacks());  // its callback is gone
  OpCounter later;
  at::mul(a, a);
  CHECK(later.counts().top_level == 1);  // only its own lifetime
}

TEST_CASE("OpCounter sees the ops of a backward pass") {
  const at::Tensor w = at::ones({3}).set_requires_grad(true);
  const at::Tensor loss = (w * w).sum();
  OpCounter counter;
  loss.backward();
  // The engine's record around each node names no op: the ops a node
  // calls (the sum's expand, w * w's two muls and their add) are top level.
  CHECK(counter.counts().top_level >= 3);
}

TEST_CASE("OpCounter counts even where RecordFunction was switched off") {
  const at::Tensor a = at::ones({3});
  at::DisableRecordFunctionGuard off;
  {
    OpCounter counter(/*by_name=*/true);
    at::add(a, a);
    at::add(a, a);
    at::mul(a, a);
    CHECK(counter.counts().top_level == 3);
    const auto names = counter.ByName(/*top_level=*/true);
    REQUIRE(names.size() == 2);
    CHECK(names[0] == std::make_pair(std::string("aten::add"), int64_t{2}));
    CHECK(names[1] == std::make_pair(std::string("aten::mul"), int64_t{1}));
  }
  CHECK_FALSE(at::isRecordFunctionEnabled());  // the switch is restored
}

// Round 1's tasks of the paper config on a synthetic set a tenth of
// FMNIST's size (600 samples a class, so every shard about a tenth of its
// real size) with the config's 10 epochs: the real mix's shape (which
// clients, their tiers, models, relative shard sizes, steps a pass
// against passes) at a tenth of its cost. With one epoch of such shards a
// task would train some 5 steps, and what a task costs to enter and leave
// the stack would outweigh its steps.
std::vector<CohortTask> SmallPaperMix(const Dataset& data,
                                      const ExperimentConfig& config) {
  auto shape = ShapeOf(data, 0);
  REQUIRE(shape.ok());
  auto probe = MakeModel(config.model.name, *shape);
  REQUIRE(probe.ok());
  auto scheduler = Scheduler::Create(config, FlatSize(**probe));
  REQUIRE(scheduler.ok());
  const RoundPlan plan = scheduler->Plan(0);
  std::vector<int64_t> clients;
  for (const ClientTask& t : plan.tasks) clients.push_back(t.client_id);
  const std::vector<int64_t> labels(data.y.data_ptr<int64_t>(),
                                    data.y.data_ptr<int64_t>() + data.size());
  auto shards = TrainingIndicesOf(config, labels, 10, clients);
  REQUIRE(shards.ok());
  std::vector<CohortTask> tasks;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    for (int64_t m : plan.tasks[i].models) {
      auto net = MakeInitialisedModel(config.model.name, *shape, 1, m);
      REQUIRE(net.ok());
      LocalTrainParams p = MakeLocalTrainParams(
          config.train, config.seed, 0, clients[i], m,
          plan.tasks[i].tier == Tier::kHpc, c10::Device(c10::kCPU));
      tasks.push_back({*net, (*shards)[i], p});
    }
  }
  return tasks;
}

TEST_CASE("a stacked round launches far fewer ops per member-step") {
  auto config = LoadConfig(std::string(SHEFL_SOURCE_DIR) +
                           "/configs/fmnist-paper.yaml");
  REQUIRE(config.ok());
  at::manual_seed(3);
  const int64_t n = 6000;
  const Dataset data{"small", at::randn({n, 1, 28, 28}),
                     at::arange(n, at::kLong).remainder(10), 10};
  std::vector<CohortTask> seq = SmallPaperMix(data, *config);
  std::vector<CohortTask> stk = SmallPaperMix(data, *config);
  REQUIRE(seq.size() == 30);  // 5 HPCs x 5 models + 5 LPCs x 1

  int64_t member_steps = 0;
  OpCounter seq_counter;
  for (CohortTask& t : seq) {
    auto st = LocalTrain(*t.net, data, t.indices, config->train, t.params);
    REQUIRE(st.ok());
    member_steps += st->steps;
  }
  seq_counter.Stop();
  OpCounter stk_counter;
  auto results = CohortTrain(stk, data, config->train, c10::Device(c10::kCPU));
  stk_counter.Stop();
  int64_t stacked_member_steps = 0;
  for (const auto& r : results) {
    REQUIRE(r.ok());
    stacked_member_steps += r->steps;
  }
  REQUIRE(stacked_member_steps == member_steps);
  const double seq_ops = seq_counter.counts().top_level;
  const double stk_ops = stk_counter.counts().top_level;
  INFO("member-steps " << member_steps << ", top-level ops per member-step: "
                       << seq_ops / member_steps << " sequential, "
                       << stk_ops / member_steps << " stacked");
  // Loose: the real mix (bench/op_count_bench) gives the figure itself.
  CHECK(seq_ops >= 8 * stk_ops);
}

}  // namespace
}  // namespace shefl
