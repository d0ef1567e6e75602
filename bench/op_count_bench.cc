// ATen operator calls per member-step (one task's one optimiser step) of a
// paper round's training on one daemon: every (client, model) task trained
// one after another (LocalTrain) against all of them as one shrinking stack
// (CohortTrain; docs/DESIGN.md, "Ensemble-native training and the round on
// a GPU"). Each op is a dispatch and on a GPU at least one kernel launch,
// so the ratio says what stacking saves a GPU in launches, and it is
// measured on a CPU as well as anywhere (common/learn/op_counter.h).
// The top-level figure is the one that holds across devices: `all` also
// counts what an op calls inside, which depends on the kernel; on a CPU
// bmm and baddbmm call addmm_ on a select of each matrix of the batch,
// where a GPU runs one batched GEMM.
//
// The mix is round 1's (round index 0) of the config, as the coordinator
// plans it (Scheduler::Plan: cohort, HPC/LPC tiers, assignment) and as a
// daemon shards it (TrainingIndicesOf, SplitClientShard); all tasks on one
// daemon. Each task starts from its model's initial weights.
#include <ATen/Context.h>
#include <ATen/Functions.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/bench_support.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"
#include "common/fed/client_metrics.h"
#include "common/fed/config_load.h"
#include "common/fed/fens_split.h"
#include "common/fed/schedule.h"
#include "common/learn/device.h"
#include "common/learn/flat_state.h"
#include "common/learn/op_counter.h"
#include "common/learn_stacked/cohort_train.h"

namespace shefl {
namespace {

constexpr char kUsage[] =
    "usage: op_count_bench [--epochs=N] [--device=cpu|cuda|cuda:N]\n"
    "                      [--top=K] [--config=PATH]\n"
    "  ATen ops per member-step of round 1's training on one daemon,\n"
    "  every task one after another (LocalTrain) against all of them as\n"
    "  one stack (CohortTrain), top-level and all (nested included), and\n"
    "  the ratio. --top=K also lists each path's K most frequent top-level\n"
    "  ops. Defaults: the config's local epochs, cpu, no list,\n"
    "  configs/fmnist-paper.yaml (run from the source tree). Fashion-MNIST\n"
    "  from its standard folder; without it a synthetic set of the same\n"
    "  shape and class sizes (so the same shards), said in the output.\n";

struct Options {
  int64_t epochs = 0;  // 0: the config's
  std::string device = "cpu";
  int64_t top = 0;
  std::string config = "configs/fmnist-paper.yaml";
};

bench::BenchFlags Flags(Options* o) {
  return {{"--epochs", bench::IntFlag(&o->epochs, 1)},
          {"--top", bench::IntFlag(&o->top, 0)},
          {"--device", bench::TextFlag(&o->device)},
          {"--config", bench::TextFlag(&o->config)}};
}

// FMNIST's training split has 6,000 samples of each class, and a
// Dirichlet split's shard sizes depend only on the class sizes, so these
// labels give the real shards' sizes.
Dataset SyntheticFmnist() {
  at::manual_seed(1);
  const int64_t n = 60000;
  return {"synthetic-fmnist", at::randn({n, 1, 28, 28}),
          at::arange(n, at::kLong).remainder(10), 10};
}

struct Mix {
  std::vector<CohortTask> tasks;
  int64_t hpcs = 0, lpcs = 0;
};

// Round `round`'s tasks, each with a fresh net holding its model's
// initial weights.
absl::StatusOr<Mix> RoundTasks(const ExperimentConfig& config,
                               const Dataset& data, int64_t round,
                               int64_t epochs, c10::Device dev) {
  SHEFL_ASSIGN_OR_RETURN(auto shape, ShapeOf(data, config.data.text_vocab));
  SHEFL_ASSIGN_OR_RETURN(auto probe, MakeModel(config.model.name, shape));
  SHEFL_ASSIGN_OR_RETURN(auto scheduler,
                         Scheduler::Create(config, FlatSize(*probe)));
  const RoundPlan plan = scheduler.Plan(round);
  std::vector<int64_t> clients;
  for (const ClientTask& t : plan.tasks) clients.push_back(t.client_id);
  SHEFL_ASSIGN_OR_RETURN(auto labels, LabelVector(data));
  SHEFL_ASSIGN_OR_RETURN(
      auto shards,
      TrainingIndicesOf(config, labels, data.num_classes, clients));
  Mix mix;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const ClientTask& t = plan.tasks[i];
    (t.tier == Tier::kHpc ? mix.hpcs : mix.lpcs) += 1;
    SHEFL_ASSIGN_OR_RETURN(
        auto split, SplitClientShard(shards[i], config.eval.client_holdout,
                                     config.seed, t.client_id));
    for (int64_t m : t.models) {
      SHEFL_ASSIGN_OR_RETURN(
          auto net,
          MakeInitialisedModel(config.model.name, shape, config.seed, m));
      net->to(dev);
      CohortTask task{net, split.train,
                      MakeLocalTrainParams(config.train, config.seed, round,
                                           t.client_id, m,
                                           t.tier == Tier::kHpc, dev)};
      if (epochs > 0) task.params.epochs = epochs;
      mix.tasks.push_back(std::move(task));
    }
  }
  return mix;
}

struct PathResult {
  OpCounts ops;
  std::vector<std::pair<std::string, int64_t>> top_names, all_names;
  std::vector<int64_t> steps;  // per task
  double seconds = 0;
};

absl::StatusOr<PathResult> Sequential(std::vector<CohortTask>& tasks,
                                      const Dataset& data,
                                      const TrainConfig& cfg, bool names) {
  PathResult r;
  const double t0 = bench::WallSeconds();
  OpCounter counter(names);
  for (size_t i = 0; i < tasks.size(); ++i) {
    SHEFL_ASSIGN_OR_RETURN(
        auto st, LocalTrain(*tasks[i].net, data, tasks[i].indices, cfg,
                            tasks[i].params));
    r.steps.push_back(st.steps);
    if ((i + 1) % 5 == 0 || i + 1 == tasks.size())
      std::fprintf(stderr, "  sequential: %zu/%zu tasks, %.0f s\n", i + 1,
                   tasks.size(), bench::WallSeconds() - t0);
  }
  counter.Stop();
  r.ops = counter.counts();
  r.top_names = counter.ByName(true);
  r.all_names = counter.ByName(false);
  r.seconds = bench::WallSeconds() - t0;
  return r;
}

absl::StatusOr<PathResult> Stacked(std::vector<CohortTask>& tasks,
                                   const Dataset& data, const TrainConfig& cfg,
                                   c10::Device dev, bool names) {
  PathResult r;
  std::fprintf(stderr, "  stacked: %zu tasks as one stack ...\n",
               tasks.size());
  const double t0 = bench::WallSeconds();
  OpCounter counter(names);
  auto results = CohortTrain(tasks, data, cfg, dev);
  counter.Stop();
  r.seconds = bench::WallSeconds() - t0;
  for (auto& st : results) {
    if (!st.ok()) return st.status();
    r.steps.push_back(st->steps);
  }
  r.ops = counter.counts();
  r.top_names = counter.ByName(true);
  r.all_names = counter.ByName(false);
  return r;
}

// Each path's k most frequent ops, top-level and all, per member-step.
void PrintTop(const char* path, const PathResult& r, int64_t member_steps,
              int64_t k) {
  for (const bool top : {true, false}) {
    const auto& names = top ? r.top_names : r.all_names;
    std::printf("%s, %s ops per member-step, most frequent first:\n", path,
                top ? "top-level" : "all");
    for (int64_t i = 0; i < k && i < static_cast<int64_t>(names.size()); ++i)
      std::printf("  %10.3f  %s\n",
                  static_cast<double>(names[i].second) / member_steps,
                  names[i].first.c_str());
  }
}

int Run(const Options& o) {
  auto config = LoadConfig(o.config);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 2;
  }
  auto dev = ResolveDevice(o.device);
  if (!dev.ok()) {
    std::fprintf(stderr, "%s\n", dev.status().ToString().c_str());
    return 2;
  }
  if (dev->is_cpu()) ConfigureThreads(1);
  auto loaded = LoadDataset(config->data, /*train=*/true, config->seed);
  const bool real = loaded.ok();
  Dataset data = real ? *loaded : SyntheticFmnist();
  if (!real)
    std::printf("data: %s not readable (%s); a synthetic set of its shape "
                "and class sizes instead\n",
                config->data.dataset.c_str(),
                loaded.status().ToString().c_str());
  data.x = data.x.to(*dev);
  data.y = data.y.to(*dev);
  const TrainConfig& cfg = config->train;
  auto seq_mix = RoundTasks(*config, data, 0, o.epochs, *dev);
  auto stk_mix = RoundTasks(*config, data, 0, o.epochs, *dev);
  for (const auto* mix : {&seq_mix, &stk_mix}) {
    if (!mix->ok()) {
      std::fprintf(stderr, "%s\n", mix->status().ToString().c_str());
      return 1;
    }
  }
  std::printf(
      "%s, round 1 on one daemon: %lld HPCs and %lld LPCs, %zu tasks, %s "
      "(%s), %lld epochs, batch %lld, device %s\n",
      config->name.c_str(), static_cast<long long>(seq_mix->hpcs),
      static_cast<long long>(seq_mix->lpcs), seq_mix->tasks.size(),
      config->model.name.c_str(), data.name.c_str(),
      static_cast<long long>(seq_mix->tasks[0].params.epochs),
      static_cast<long long>(cfg.batch_size), dev->str().c_str());
  std::fflush(stdout);
  auto seq = Sequential(seq_mix->tasks, data, cfg, o.top > 0);
  if (!seq.ok()) {
    std::fprintf(stderr, "sequential: %s\n", seq.status().ToString().c_str());
    return 1;
  }
  auto stk = Stacked(stk_mix->tasks, data, cfg, *dev, o.top > 0);
  if (!stk.ok()) {
    std::fprintf(stderr, "stacked: %s\n", stk.status().ToString().c_str());
    return 1;
  }
  int64_t member_steps = 0, longest = 0;
  for (int64_t s : seq->steps) {
    member_steps += s;
    longest = std::max(longest, s);
  }
  if (stk->steps != seq->steps)
    std::printf("warning: the stacked path's step counts differ\n");
  const auto per = [&](int64_t n) {
    return static_cast<double>(n) / static_cast<double>(member_steps);
  };
  // The stack runs until its longest task ends, one stacked step a step.
  const double occupancy = static_cast<double>(member_steps) / longest;
  std::printf(
      "member-steps %lld, stacked steps %lld (the longest task), %.1f "
      "tasks in the stack on average\n",
      static_cast<long long>(member_steps), static_cast<long long>(longest),
      occupancy);
  std::printf("%-26s %10s %10s %8s\n", "ops per member-step", "top-level",
              "all", "seconds");
  std::printf("%-26s %10.2f %10.2f %8.1f\n", "  sequential",
              per(seq->ops.top_level), per(seq->ops.all), seq->seconds);
  std::printf("%-26s %10.2f %10.2f %8.1f\n", "  stacked",
              per(stk->ops.top_level), per(stk->ops.all), stk->seconds);
  std::printf("%-26s %9.1fx %9.1fx\n", "  ratio",
              static_cast<double>(seq->ops.top_level) / stk->ops.top_level,
              static_cast<double>(seq->ops.all) / stk->ops.all);
  std::printf("%-26s %10.1f %10.1f\n", "stacked, per stacked step",
              per(stk->ops.top_level) * occupancy,
              per(stk->ops.all) * occupancy);
  if (o.top > 0) {
    PrintTop("sequential", *seq, member_steps, o.top);
    PrintTop("stacked", *stk, member_steps, o.top);
  }
  return 0;
}

}  // namespace
}  // namespace shefl

int main(int argc, char** argv) {
  shefl::Options o;
  const shefl::bench::BenchArgs args = shefl::bench::ParseBenchArgs(
      argc, argv, shefl::kUsage, shefl::Flags(&o), /*max_positional=*/0);
  if (args.exit_code >= 0) return args.exit_code;
  return shefl::Run(o);
}
