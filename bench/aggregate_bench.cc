// Aggregation of many sparse updates into the M global models:
//   build/bin/aggregate_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
// Arguments: (number of updates, model dimension d). Density 0.1, M = 5;
// updates are spread round-robin over the models, half from HPCs.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>

#include "common/aggregate.h"
#include "common/rng.h"

namespace shefl {
namespace {

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
  int64_t nnz = 0;
  for (const auto& u : ups) nnz += u.delta.nnz();
  for (auto _ : state) {
    std::vector<ModelAggregator> aggs;
    for (int64_t m = 0; m < M; ++m)
      aggs.emplace_back(cfg, CohortShape{M, num_updates / 2, num_updates / 2},
                        dim);
    for (int64_t i = 0; i < num_updates; ++i)
      if (!aggs[i % M].Add(ups[i]).ok()) state.SkipWithError("Add failed");
    for (int64_t m = 0; m < M; ++m)
      if (!aggs[m].ApplyTo(&models[m]).ok()) state.SkipWithError("Apply");
  }
  state.SetItemsProcessed(state.iterations() * nnz);
  state.counters["updates"] = static_cast<double>(num_updates);
  state.counters["nnz_per_update"] = static_cast<double>(nnz) / num_updates;
}

BENCHMARK(BM_Aggregate)
    ->Args({10, 582026})
    ->Args({100, 582026})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace shefl

BENCHMARK_MAIN();
