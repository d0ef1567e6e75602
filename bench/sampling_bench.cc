// Sampling and assignment of one round (Scheduler::Plan) with N clients
// and C a round:
//   build/bin/sampling_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true    (one command line)
// Arguments: (N, C, filter). C is 10% HPCs, the rest LPCs; shefl, M = 5,
// clustered sampling as configs/ have it, 10% over-selection. filter 0:
// every client connected (the coordinator passes no filter then, and the
// draw costs O(C)); 1: a filter that is asked about every client (a
// daemon is gone: O(N)). The target (docs/PERFORMANCE.md, section 10): under
// 10 ms for C = 1,000 of N = 100,000 with everyone connected.
#include <benchmark/benchmark.h>

#include "common/core/config.h"
#include "common/fed/schedule.h"

namespace shefl {
namespace {

void BM_Plan(benchmark::State& state) {
  ExperimentConfig c;
  c.clients.num_clients = state.range(0);
  c.clients.num_hpc = state.range(0) / 10;
  c.clients.per_round_hpc = state.range(1) / 10;
  c.clients.per_round_lpc = state.range(1) - c.clients.per_round_hpc;
  c.clients.over_selection = 0.1;
  for (const char* sampling : {"clustered", "uniform"})
    if (state.range(3) == (std::string(sampling) == "uniform"))
      c.clients.sampling = sampling;
  auto s = Scheduler::Create(c, 55210);
  if (!s.ok()) {
    state.SkipWithError(std::string(s.status().message()).c_str());
    return;
  }
  Availability filter = nullptr;
  if (state.range(2) == 1) filter = [](int64_t id) { return id % 97 != 5; };
  int64_t round = 0, tasks = 0;
  for (auto _ : state) {
    RoundPlan plan = s->Plan(round++, filter);
    tasks += static_cast<int64_t>(plan.tasks.size());
    benchmark::DoNotOptimize(plan);
  }
  state.counters["tasks"] = static_cast<double>(tasks) / state.iterations();
}

// (N, C, filter, uniform sampling)
BENCHMARK(BM_Plan)
    ->Args({100000, 1000, 0, 0})
    ->Args({1000000, 1000, 0, 0})
    ->Args({100000, 1000, 0, 1})
    ->Args({1000000, 1000, 0, 1})
    ->Args({100000, 1000, 1, 0})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shefl

BENCHMARK_MAIN();
