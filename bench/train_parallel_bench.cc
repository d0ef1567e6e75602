// How fast do training tasks run side by side in one process? The daemon
// runs as many single-thread tasks at once as it has cores (docs/DESIGN.md,
// "The processes and the round"); this measures the paper CNN's local step
// alone and with W tasks at once, in alternating sittings, and prints the
// per-task slowdown (1.00 = no interference). Run:
// build/bin/train_parallel_bench [steps] [sittings]
#include <ATen/Parallel.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_support.h"
#include "common/core/config.h"
#include "common/learn/device.h"
#include "common/learn/models.h"
#include "common/learn/train.h"

namespace {

using shefl::Dataset;
using shefl::bench::Median;
using shefl::bench::ThreadCpuSeconds;
using shefl::bench::WallSeconds;

Dataset FakeFashion(int64_t n) {
  Dataset d;
  d.x = at::randn({n, 1, 28, 28});
  d.y = at::randint(0, 10, {n}, at::kLong);
  d.num_classes = 10;
  return d;
}

// Seconds per step of one task (its own model) on this thread; its CPU
// seconds per step (what load on a shared machine does not inflate) in *cpu.
double RunTask(const Dataset& data, int64_t steps, int64_t member,
               double* cpu = nullptr) {
  shefl::ModelShape shape{1, 28, 28, 0, 0, 10};
  auto model = shefl::MakeInitialisedModel("cnn", shape, 7, member);
  if (!model.ok()) std::abort();
  std::vector<int64_t> idx(data.size());
  for (int64_t i = 0; i < data.size(); ++i) idx[i] = i;
  shefl::TrainConfig cfg;
  cfg.momentum = 0.5;
  shefl::LocalTrainParams p;
  p.steps = steps;
  p.member = member;
  const double t0 = WallSeconds();
  const double c0 = ThreadCpuSeconds();
  auto stats = shefl::LocalTrain(**model, data, idx, cfg, p);
  if (!stats.ok()) std::abort();
  const double dt = WallSeconds() - t0;
  if (cpu) *cpu = (ThreadCpuSeconds() - c0) / static_cast<double>(steps);
  return dt / static_cast<double>(steps);
}

struct StepTimes {
  double wall = 0, cpu = 0;  // seconds per step, mean over the tasks
};

// `width` tasks started together, each on its own thread.
StepTimes RunSideBySide(const Dataset& data, int64_t steps, int width) {
  std::vector<double> wall(width), cpu(width);
  std::vector<std::thread> ts;
  for (int w = 0; w < width; ++w)
    ts.emplace_back([&, w] { wall[w] = RunTask(data, steps, w, &cpu[w]); });
  for (auto& t : ts) t.join();
  StepTimes out;
  for (int w = 0; w < width; ++w) {
    out.wall += wall[w] / width;
    out.cpu += cpu[w] / width;
  }
  return out;
}

}  // namespace

constexpr char kUsage[] =
    "usage: train_parallel_bench [STEPS] [SITTINGS] [alone]\n"
    "  Trains the paper CNN (batch 16, one intra-op thread a task) alone\n"
    "  and as one task per core side by side in one process, in\n"
    "  alternating sittings; prints wall and per-thread CPU ms per step\n"
    "  (medians) and the slowdown (1.00: none). Defaults: 60 steps, 3\n"
    "  sittings; `alone`: only the single-task sittings.\n";

int main(int argc, char** argv) {
  const shefl::bench::BenchArgs args = shefl::bench::ParseBenchArgs(argc, argv, kUsage);
  if (args.exit_code >= 0) return args.exit_code;
  const int64_t steps = args.IntArg(0, 60);
  const int sittings = static_cast<int>(args.IntArg(1, 3));
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  // "alone": only the single-task sittings (start one per core as separate
  // processes to compare processes with threads).
  const bool alone_only = args.Arg(2, "") == "alone";
  shefl::ConfigureThreads(1);
  std::printf("%s", at::get_parallel_info().c_str());
  int in_worker = 0;
  std::thread([&] { in_worker = at::get_num_threads(); }).join();
  std::printf("intra-op threads: main %d, a new thread %d\n",
              at::get_num_threads(), in_worker);
  const Dataset data = FakeFashion(2048);
  RunTask(data, 5, 0);  // warm-up: allocator, first-call paths
  std::vector<double> alone, together, alone_cpu, together_cpu;
  for (int s = 0; s < sittings; ++s) {
    const StepTimes a = RunSideBySide(data, steps, 1);
    const StepTimes t = alone_only ? a : RunSideBySide(data, steps, cores);
    alone.push_back(a.wall);
    alone_cpu.push_back(a.cpu);
    together.push_back(t.wall);
    together_cpu.push_back(t.cpu);
    std::printf(
        "sitting %d: alone %.2f ms/step (cpu %.2f), %d at once %.2f ms/step "
        "(cpu %.2f)\n",
        s + 1, 1e3 * a.wall, 1e3 * a.cpu, cores, 1e3 * t.wall, 1e3 * t.cpu);
  }
  const double a = Median(alone), t = Median(together);
  const double ac = Median(alone_cpu), tc = Median(together_cpu);
  std::printf(
      "cnn batch 16, 1 intra-op thread per task: alone %.2f ms/step, %d at "
      "once %.2f ms/step each, slowdown %.2fx (1.00 = none); thread cpu "
      "%.2f vs %.2f ms/step, %.2fx\n",
      1e3 * a, cores, 1e3 * t, t / a, 1e3 * ac, 1e3 * tc, tc / ac);
  return 0;
}
