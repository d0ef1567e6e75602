// Cohort-stacked training (common/learn_stacked/cohort_train.h): a round's
// tasks, each with its own shard, batch order, lr and number of steps, trained
// as one stack, give each task LocalTrain's own weights and stats.
//
// Tolerance: as in stacked_members_test, the stacked kernels (grouped
// convolution, batched products, a per-sample cross-entropy meaned per
// lane or, for a padded lane, summed over its mask) sum in another order
// than a task's own, so weights agree to 1e-4 relative (max |a - b| over
// max |b| of the flat state), far below what training moves them (checked
// per task: more than 100x the tolerance), so a wrong batch, a wrong lane
// or a wrong gradient fails.
#include "common/learn_stacked/cohort_train.h"

#include <ATen/Functions.h>

#include <numeric>

#include "common/learn/flat_state.h"
#include "common/learn/train.h"
#include "tests/synthetic_sets.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::Features;
using testing::Images;



std::shared_ptr<Net> Model(const std::string& name, const Dataset& d,
                           int64_t k) {
  auto shape = ShapeOf(d, 0);
  REQUIRE(shape.ok());
  auto net = MakeInitialisedModel(name, *shape, 5, k);
  REQUIRE(net.ok());
  return *net;
}

double RelErr(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>() /
         std::max(1e-30, b.abs().max().item<double>());
}

TrainConfig Config(double momentum = 0) {
  TrainConfig c;
  c.lr = 0.05;
  c.batch_size = 16;
  c.momentum = momentum;
  c.weight_decay = 1e-3;
  return c;
}

// Task t: its own contiguous shard of `sizes[t]` samples, seed tags and
// member; `epochs` passes unless steps[t] > 0.
std::vector<CohortTask> Tasks(const std::string& model, const Dataset& d,
                              const std::vector<int64_t>& sizes,
                              const std::vector<int64_t>& steps,
                              int64_t epochs) {
  std::vector<CohortTask> out;
  int64_t offset = 0;
  for (size_t t = 0; t < sizes.size(); ++t) {
    CohortTask task;
    task.net = Model(model, d, static_cast<int64_t>(t % 3));
    task.indices.resize(sizes[t]);
    std::iota(task.indices.begin(), task.indices.end(), offset);
    offset += sizes[t];
    task.params.lr = 0.05;
    task.params.epochs = epochs;
    task.params.steps = steps.empty() ? 0 : steps[t];
    task.params.seed = 7;
    task.params.round = 3;
    task.params.client = static_cast<int64_t>(t / 2);
    task.params.member = static_cast<int64_t>(t % 2);
    out.push_back(std::move(task));
  }
  return out;
}

// A fresh copy of every task (same start weights), for LocalTrain.
std::vector<CohortTask> Copies(const std::string& model, const Dataset& d,
                               const std::vector<CohortTask>& tasks) {
  std::vector<CohortTask> out = tasks;
  for (size_t t = 0; t < tasks.size(); ++t) {
    out[t].net = Model(model, d, static_cast<int64_t>(t % 3));
    REQUIRE(Unflatten(Flatten(*tasks[t].net), *out[t].net).ok());
  }
  return out;
}

void CheckLikeLocalTrain(const std::string& model, const Dataset& d,
                         std::vector<CohortTask> tasks, const TrainConfig& cfg) {
  std::vector<CohortTask> alone = Copies(model, d, tasks);
  auto results = CohortTrain(tasks, d, cfg, c10::Device(c10::kCPU));
  REQUIRE(results.size() == tasks.size());
  for (size_t t = 0; t < tasks.size(); ++t) {
    const at::Tensor before = Flatten(*alone[t].net).clone();
    auto one = LocalTrain(*alone[t].net, d, alone[t].indices, cfg,
                          alone[t].params);
    REQUIRE(one.ok());
    REQUIRE(results[t].ok());
    const at::Tensor want = Flatten(*alone[t].net);
    const double err = RelErr(Flatten(*tasks[t].net), want);
    INFO(model << " task " << t << ": rel err " << err);
    CHECK(err < 1e-4);
    CHECK(RelErr(before, want) > 1e-2);  // training moved it far past 1e-4
    CHECK(results[t]->steps == one->steps);
    CHECK(results[t]->samples == one->samples);
    CHECK(results[t]->first_loss == Approx(one->first_loss).epsilon(1e-5));
    CHECK(results[t]->mean_loss == Approx(one->mean_loss).epsilon(1e-4));
    CHECK(results[t]->last_epoch_loss ==
          Approx(one->last_epoch_loss).epsilon(1e-4));
  }
}

TEST_CASE("a cnn cohort of unequal shards trains as each task alone") {
  // 37 and 23 leave short last batches; 64 and 48 do not; the stack
  // shrinks as the shorter shards finish their two passes.
  const Dataset d = Images(37 + 64 + 23 + 48 + 5, 1);
  CheckLikeLocalTrain("cnn", d, Tasks("cnn", d, {37, 64, 23, 48, 5}, {}, 2),
                      Config());
}

TEST_CASE("an mlp cohort with momentum, steps and a cosine lr trains as alone") {
  const Dataset d = Features(40 + 70 + 17, 2);
  TrainConfig cfg = Config(0.9);
  cfg.lr_schedule = "cosine";  // lanes in different passes: lr per lane
  // One task by steps (it stops mid-pass), two by epochs.
  CheckLikeLocalTrain("mlp", d, Tasks("mlp", d, {40, 70, 17}, {7, 0, 0}, 3),
                      cfg);
}

TEST_CASE("a cohort under FedProx trains as alone") {
  const Dataset d = Features(30 + 50, 3);
  TrainConfig cfg = Config();
  cfg.prox_mu = 0.5;
  std::vector<CohortTask> tasks = Tasks("mlp", d, {30, 50}, {}, 2);
  for (CohortTask& t : tasks)
    t.params.prox_reference = Flatten(*t.net) + 0.05 * at::randn({FlatSize(*t.net)});
  CheckLikeLocalTrain("mlp", d, tasks, cfg);
}

TEST_CASE("one task's bad input or divergence costs no other task its result") {
  const Dataset d = Features(40 + 40 + 40, 4);
  std::vector<CohortTask> tasks = Tasks("mlp", d, {40, 40, 40}, {}, 2);
  tasks[0].indices.push_back(10'000);  // out of range
  tasks[1].params.lr = 1e30;           // diverges
  std::vector<CohortTask> alone = Copies("mlp", d, tasks);
  auto results = CohortTrain(tasks, d, Config(), c10::Device(c10::kCPU));
  REQUIRE(results.size() == 3);
  CHECK(results[0].status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(results[0].status().message()).find("10000") !=
        std::string::npos);
  REQUIRE_FALSE(results[1].ok());
  CHECK(std::string(results[1].status().message()).find("diverged") !=
        std::string::npos);
  REQUIRE(results[2].ok());
  REQUIRE(LocalTrain(*alone[2].net, d, alone[2].indices, Config(),
                     alone[2].params).ok());
  CHECK(RelErr(Flatten(*tasks[2].net), Flatten(*alone[2].net)) < 1e-4);
}

TEST_CASE("BatchNorm models are not stacked: auto and on say why") {
  const Dataset d = Images(40, 5, 3, 8);
  auto shape = ShapeOf(d, 0);
  REQUIRE(shape.ok());
  auto resnet = MakeInitialisedModel("resnet18", *shape, 5, 0);
  REQUIRE(resnet.ok());
  const TrainConfig cfg = Config();
  CHECK(CohortSupports(**resnet, cfg).code() == absl::StatusCode::kUnimplemented);
  auto on = ResolveStacking(Stacking::kOn, **resnet, cfg, c10::Device(c10::kCPU));
  REQUIRE_FALSE(on.ok());
  CHECK(std::string(on.status().message()).find("train.stacking") !=
        std::string::npos);
  CHECK(std::string(on.status().message()).find("BatchNorm") != std::string::npos);
  auto cnn = Model("cnn", Images(4, 5), 0);
  CHECK_FALSE(*ResolveStacking(Stacking::kAuto, *cnn, cfg, c10::Device(c10::kCPU)));
  CHECK(*ResolveStacking(Stacking::kOn, *cnn, cfg, c10::Device(c10::kCPU)));
  CHECK_FALSE(*ResolveStacking(Stacking::kOff, *cnn, cfg, c10::Device(c10::kCPU)));
  TrainConfig adam = cfg;
  adam.optimizer = "adam";
  CHECK_FALSE(ResolveStacking(Stacking::kOn, *cnn, adam, c10::Device(c10::kCPU)).ok());
  CHECK(ParseStacking("auto").ok());
  CHECK(ParseStacking("sometimes").status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a cohort the stack cannot take trains one by one, bit for bit") {
  const Dataset d = Images(20 + 30, 6);
  TrainConfig cfg = Config();
  cfg.optimizer = "adam";
  cfg.lr = 1e-3;
  std::vector<CohortTask> tasks = Tasks("cnn", d, {20, 30}, {}, 1);
  std::vector<CohortTask> alone = Copies("cnn", d, tasks);
  auto results = CohortTrain(tasks, d, cfg, c10::Device(c10::kCPU));
  for (size_t t = 0; t < tasks.size(); ++t) {
    REQUIRE(results[t].ok());
    REQUIRE(LocalTrain(*alone[t].net, d, alone[t].indices, cfg,
                       alone[t].params).ok());
    CHECK(at::equal(Flatten(*tasks[t].net), Flatten(*alone[t].net)));
  }
}

}  // namespace
}  // namespace shefl
