// Aggregation of many sparse updates into the M global models:
//   build/bin/aggregate_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true    (one command line)
// Arguments: (number of updates, model dimension d). Density 0.1, M = 5;
// updates are spread round-robin over the models, half from HPCs. Timed:
// what the coordinator does with a round's decoded updates, Add (moved in,
// validated) and ApplyTo for every model; the copies the benchmark needs
// to hand over fresh updates each iteration are not timed.
// The target (docs/PERFORMANCE.md, table row 6): (100, 11,200,000), 20
// updates per model, under 1 s.
// A third argument picks aggregation.reduction: 0 client_order (buffered,
// folded at close), 1 fixed_point (folded at Add, nothing kept). The
// `held_mib` counter is what the round holds at close besides the models:
// the buffered updates, or the fixed-point sums.
// (1400, 55,210) is a round of 1,000 clients of the mlp (100
// HPCs x 5 models + 900 LPCs).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>

#include "bench/bench_support.h"
#include "common/core/rng.h"
#include "common/fed/aggregate.h"

namespace shefl {
namespace {

using bench::ThreadCpuMs;

SparseDelta RandomSparse(uint64_t dim, uint64_t k, std::mt19937_64& rng) {
  SparseDelta d;
  d.dim = dim;
  // k ascending indices from a random walk: cheap and close to uniform.
  const double gap = static_cast<double>(dim) / k;
  double pos = 0;
  std::uniform_real_distribution<double> u(0.0, 2.0 * gap);
  for (uint64_t i = 0; i < k; ++i) {
    pos += std::max(1.0, u(rng));
    if (pos >= dim) break;
    d.indices.push_back(static_cast<uint32_t>(pos));
  }
  std::normal_distribution<float> n(0, 1);
  for (size_t i = 0; i < d.indices.size(); ++i) d.values.push_back(n(rng));
  return d;
}

void BM_Aggregate(benchmark::State& state) {
  const int64_t num_updates = state.range(0);
  const uint64_t dim = state.range(1);
  const int64_t M = 5;
  std::mt19937_64 rng(1);
  std::vector<ReceivedUpdate> ups;
  for (int64_t i = 0; i < num_updates; ++i) {
    ReceivedUpdate u;
    u.client_id = i;
    u.tier = i % 2 ? Tier::kLpc : Tier::kHpc;
    u.delta = RandomSparse(dim, dim / 10, rng);
    ups.push_back(std::move(u));
  }
  std::vector<std::vector<float>> models(M, std::vector<float>(dim, 0.f));
  AggregationConfig cfg;
  cfg.reduction = state.range(2) == 1 ? "fixed_point" : "client_order";
  int64_t nnz = 0;
  for (const auto& u : ups) nnz += u.delta.nnz();
  // Where the time goes, in this thread's CPU time (the machine is shared:
  // wall time includes waiting for a core; ApplyTo's second thread, on
  // models of 2^21 weights or more, is not counted here).
  double add_ms = 0, apply_ms = 0, free_ms = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<ReceivedUpdate> fresh = ups;
    state.ResumeTiming();
    const double t0 = ThreadCpuMs();
    {
      std::vector<ModelAggregator> aggs;
      for (int64_t m = 0; m < M; ++m)
        aggs.emplace_back(
            cfg, CohortShape{M, num_updates / 2, num_updates / 2}, dim);
      for (int64_t i = 0; i < num_updates; ++i)
        if (!aggs[i % M].Add(std::move(fresh[i])).ok())
          state.SkipWithError("Add failed");
      const double t1 = ThreadCpuMs();
      for (int64_t m = 0; m < M; ++m)
        if (!aggs[m].ApplyTo(&models[m]).ok()) state.SkipWithError("Apply");
      const double t2 = ThreadCpuMs();
      add_ms += t1 - t0;
      apply_ms += t2 - t1;
      free_ms -= t2;
    }  // the updates are freed here
    free_ms += ThreadCpuMs();
  }
  // Held at close: every update's indices and values, or per model the
  // fixed-point sums of the groups that received an update (two here).
  const double held = cfg.reduction == "fixed_point"
                          ? static_cast<double>(M) * 2 * 16 * dim
                          : static_cast<double>(nnz) * 8;
  state.counters["held_mib"] = held / (1 << 20);
  const double n = static_cast<double>(state.iterations());
  state.counters["add_cpu_ms"] = add_ms / n;
  state.counters["apply_cpu_ms"] = apply_ms / n;
  state.counters["free_cpu_ms"] = free_ms / n;
  state.SetItemsProcessed(state.iterations() * nnz);
  state.counters["updates"] = static_cast<double>(num_updates);
  state.counters["nnz_per_update"] = static_cast<double>(nnz) / num_updates;
}

BENCHMARK(BM_Aggregate)
    ->Args({10, 582026, 0})
    ->Args({100, 582026, 0})
    ->Args({100, 11200000, 0})
    ->Args({100, 582026, 1})
    ->Args({1400, 55210, 0})
    ->Args({1400, 55210, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace shefl

BENCHMARK_MAIN();
