// Evaluation batches shared among threads (common/learn/eval_batches.h):
// consumed in order, errors carried back, thread-local state carried over,
// and an ensemble's figures the same bit for bit on any number of threads.
#include "common/learn/eval_batches.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "common/learn/evaluate.h"
#include "common/learn/models.h"
#include "common/learn/precision.h"
#include "server/round/evaluator.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

int ThisThreadNice() {
  return getpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)));
}

TEST_CASE("batches are consumed in order, each computed once, off-thread") {
  const at::Tensor w = at::ones({3}).requires_grad_(true);
  c10::NoGradGuard no_grad;  // must carry over to the workers
  std::atomic<int> computed{0}, lowered{0}, with_grad{0};
  const int base = ThisThreadNice();
  std::vector<int64_t> order;
  ForBatchesInOrder(
      40, EvalThreads{4, 3},
      [&](int64_t b) {
        ++computed;
        if (ThisThreadNice() == std::min(19, base + 3)) ++lowered;
        at::Tensor out = w * static_cast<double>(b);
        if (out.requires_grad()) ++with_grad;
        return std::vector<at::Tensor>{out};
      },
      [&](std::vector<at::Tensor>& r) {
        order.push_back(static_cast<int64_t>(r[0][0].item<float>()));
      });
  CHECK(computed == 40);
  CHECK(lowered == 40);
  CHECK(with_grad == 0);
  REQUIRE(order.size() == 40);
  for (int64_t b = 0; b < 40; ++b) CHECK(order[b] == b);
  CHECK(ThisThreadNice() == base);  // only the workers were lowered
}

// The batches' threads, with helpers held back until `all_in` rises at
// batch `rise` (never when rise < 0).
std::set<std::thread::id> ThreadsUsed(int64_t rise) {
  std::atomic<bool> all_in{false};
  std::mutex mu;
  std::set<std::thread::id> ids;
  ForBatchesInOrder(
      30, EvalThreads{3, 0, &all_in},
      [&](int64_t b) {
        if (b == rise) all_in = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::lock_guard<std::mutex> lock(mu);
        ids.insert(std::this_thread::get_id());
        return std::vector<at::Tensor>{at::zeros({1})};
      },
      [](std::vector<at::Tensor>&) {});
  return ids;
}

TEST_CASE("helpers join only once the evaluation is waited for") {
  CHECK(ThreadsUsed(-1).size() == 1);
  CHECK(ThreadsUsed(5).size() == 3);
}

TEST_CASE("an error in a batch comes back to the caller") {
  int consumed = 0;
  CHECK_THROWS_WITH(
      ForBatchesInOrder(
          10, EvalThreads{3, 0},
          [](int64_t b) -> std::vector<at::Tensor> {
            if (b == 6) throw std::runtime_error("batch 6 failed");
            return {at::zeros({1})};
          },
          [&](std::vector<at::Tensor>&) { ++consumed; }),
      "batch 6 failed");
  CHECK(consumed == 0);  // nothing half-consumed
}

ModelShape Images() {
  ModelShape s;
  s.in_channels = 1;
  s.height = 28;
  s.width = 28;
  s.num_classes = 10;
  return s;
}

void CheckSame(const EvalResult& a, const EvalResult& b) {
  CHECK(a.samples == b.samples);
  CHECK(a.ensemble_accuracy == b.ensemble_accuracy);
  CHECK(a.ensemble_nll == b.ensemble_nll);
  CHECK(a.ece == b.ece);
  CHECK(a.mean_entropy == b.mean_entropy);
  CHECK(a.predictive_variance == b.predictive_variance);
  CHECK(a.member_accuracy == b.member_accuracy);
  CHECK(a.member_nll == b.member_nll);
}

TEST_CASE("an ensemble's figures do not depend on the evaluation threads") {
  at::manual_seed(3);
  Dataset d{"syn", at::rand({300, 1, 28, 28}), at::randint(10, {300}, at::kLong),
            10};
  std::vector<std::shared_ptr<Net>> models;
  for (int k = 0; k < 3; ++k) {
    auto m = MakeInitialisedModel("cnn", Images(), 4, k);
    REQUIRE(m.ok());
    models.push_back(*m);
  }
  const c10::Device cpu(c10::kCPU);
  // 300 samples in batches of 64: five batches, the last one short.
  auto one = EvaluateEnsemble(models, d, 64, 0, cpu, {}, EvalThreads{1, 0});
  auto three = EvaluateEnsemble(models, d, 64, 0, cpu, {}, EvalThreads{3, 5});
  REQUIRE(one.ok());
  REQUIRE(three.ok());
  CHECK(one->samples == 300);
  CheckSame(*one, *three);
  if (CpuHasBf16()) {  // autocast must carry over to the workers too
    AutocastScope bf16("bf16", cpu);
    auto b1 = EvaluateEnsemble(models, d, 64, 0, cpu, {}, EvalThreads{1, 0});
    auto b3 = EvaluateEnsemble(models, d, 64, 0, cpu, {}, EvalThreads{3, 0});
    REQUIRE(b1.ok());
    REQUIRE(b3.ok());
    CheckSame(*b1, *b3);
    CHECK(b3->ensemble_nll != one->ensemble_nll);
  }
}

TEST_CASE("bad evaluation thread flags are refused at start, named") {
  ExperimentConfig config;
  auto none = Evaluator::Create(config, EvalThreads{0, 0});
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(std::string(none.status().message()),
             Catch::Contains("--eval-threads"));
  auto nice = Evaluator::Create(config, EvalThreads{2, 20});
  REQUIRE_FALSE(nice.ok());
  CHECK_THAT(std::string(nice.status().message()),
             Catch::Contains("--eval-nice"));
}

}  // namespace
}  // namespace shefl
