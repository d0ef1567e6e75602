// Exact top-k by magnitude (docs/PERFORMANCE.md, "Top-k"): ours (TopK, the CPU
// sampled radix select of common/sparse/radix_topk.h) against torch.topk of |x|
// (unsorted, as PyTorch users call it), one thread, in the same run, on the
// sizes shefl sends: the FMNIST CNN (d = 582,026) and ResNet-18 (11.2M) at
// densities 0.1 and 0.02 of N(0, 1) deltas. Also the previous two-pass
// radix select (the "before") and the k = d path dense baselines take.
// Each case's variants run one after another, so they share the machine's
// mood; the end of the output is a table of medians and ratios.
//   build/bin/topk_bench --benchmark_repetitions=5 \
//       --benchmark_report_aggregates_only=true
// Target: torch / ours >= 3 in all four cases.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "common/fed/schedule.h"
#include "common/learn/compress.h"
#include "common/sparse/radix_topk.h"

namespace shefl {
namespace {

const at::Tensor& Delta(int64_t d) {
  static std::map<int64_t, at::Tensor> cache;
  auto it = cache.find(d);
  if (it == cache.end()) {
    at::Generator gen = at::detail::createCPUGenerator(42);
    it = cache.emplace(d, at::randn({d}, gen, at::kFloat)).first;
  }
  return it->second;
}

void Ours(benchmark::State& state, int64_t d, int64_t k) {
  const at::Tensor& x = Delta(d);
  for (auto _ : state) {
    auto r = TopK(x, k);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(r->indices.data());
  }
  state.SetItemsProcessed(state.iterations() * d);
}

void Torch(benchmark::State& state, int64_t d, int64_t k) {
  const at::Tensor& x = Delta(d);
  for (auto _ : state) {
    auto r = at::topk(x.abs(), k, /*dim=*/0, /*largest=*/true,
                      /*sorted=*/false);
    benchmark::DoNotOptimize(std::get<1>(r).data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * d);
}

void TwoPass(benchmark::State& state, int64_t d, int64_t k) {
  const at::Tensor& x = Delta(d);
  for (auto _ : state) {
    SparseDelta r;
    RadixTopKTwoPass(x.data_ptr<float>(), d, k, &r);
    benchmark::DoNotOptimize(r.indices.data());
  }
  state.SetItemsProcessed(state.iterations() * d);
}

struct Case {
  int64_t d;
  int64_t permille;  // density * 1000; 1000 is the dense k = d path
  std::string Name() const {
    return "d:" + std::to_string(d) + "/permille:" + std::to_string(permille);
  }
};

const std::vector<Case>& Cases() {
  static const std::vector<Case> cases = {
      {582026, 100}, {582026, 20}, {11200000, 100}, {11200000, 20},
      {582026, 1000}, {11200000, 1000}};
  return cases;
}

void Register() {
  for (const Case& c : Cases()) {
    const int64_t k = KForDensity(c.d, c.permille / 1000.0);
    const std::string n = c.Name();
    std::vector<benchmark::internal::Benchmark*> bs = {
        benchmark::RegisterBenchmark(("ours/" + n).c_str(), Ours, c.d, k)};
    if (c.permille < 1000) {
      bs.push_back(
          benchmark::RegisterBenchmark(("torch/" + n).c_str(), Torch, c.d, k));
      bs.push_back(benchmark::RegisterBenchmark(("two_pass/" + n).c_str(),
                                                TwoPass, c.d, k));
    }
    for (auto* b : bs) b->Unit(benchmark::kMillisecond)->MinTime(0.3)->UseRealTime();
  }
}

// The console output as usual, and each benchmark's median (the median
// aggregate with repetitions, else the single run) kept for the table.
class MedianTable : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const bool median = r.run_type == Run::RT_Aggregate &&
                          r.aggregate_name == "median";
      const bool single = r.run_type == Run::RT_Iteration && r.repetitions <= 1;
      if (median || single)
        ms_[r.run_name.function_name] = r.GetAdjustedRealTime();
    }
  }

  void PrintTable() const {
    std::printf("\n%-28s %10s %10s %10s %9s %11s\n", "case", "ours_ms",
                "torch_ms", "2pass_ms", "torch/us", "torch/2pass");
    bool met = true;
    for (const Case& c : Cases()) {
      const std::string n = c.Name();
      const double ours = Get("ours/" + n);
      if (c.permille == 1000) {
        std::printf("%-28s %10.3f %10s %10s %9s %11s  (k = d)\n", n.c_str(),
                    ours, "-", "-", "-", "-");
        continue;
      }
      const double torch = Get("torch/" + n), two = Get("two_pass/" + n);
      const double ratio = torch / ours;
      met = met && ratio >= 3;
      std::printf("%-28s %10.3f %10.3f %10.3f %9.2f %11.2f\n", n.c_str(), ours,
                  torch, two, ratio, torch / two);
    }
    std::printf("target torch/ours >= 3 in all four cases: %s\n",
                met ? "met" : "NOT met");
  }

 private:
  double Get(const std::string& name) const {
    auto it = ms_.find(name);
    return it == ms_.end() ? -1 : it->second;
  }
  std::map<std::string, double> ms_;  // benchmark name -> median, ms
};

}  // namespace
}  // namespace shefl

int main(int argc, char** argv) {
  at::set_num_threads(1);  // single thread, both sides
  shefl::Register();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  shefl::MedianTable table;
  benchmark::RunSpecifiedBenchmarks(&table);
  table.PrintTable();
  benchmark::Shutdown();
  return 0;
}
