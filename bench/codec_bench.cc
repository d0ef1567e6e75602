// Top-k + encode on the sizes shefl sends: the FMNIST CNN (d = 582,026)
// and ResNet-18 (d = 11.2M), at the default density 0.1 and the "extreme"
// 0.02 (docs/DESIGN.md, "Compression budget"). Deltas are N(0, 1). Counters:
//   bytes          the encoded size
//   idx_bits/k     index-section bits per kept index
//   floor_bits/k   log2(C(d, k)) / k, the ideal index code
//   idx/floor      their ratio (target <= 1.05: docs/PERFORMANCE.md,
//                  "Index codes")
//   dense_GB/s     d * 4 bytes (the dense fp32 delta the update stands for)
//                  per second of encoding or decoding, 10^9 bytes (target
//                  >= 1 on one core); per wall second where the benchmark
//                  says real_time, else per CPU second of its thread
// BM_EncodeAs / BM_DecodeAs force each index format (varint, bitmap,
// Golomb-Rice, Elias-Fano; dense at k = d); BM_Encode / BM_Decode take the
// one the encoder picks. One core: the codec is single-threaded.
// Run: build/bin/codec_bench --benchmark_repetitions=3
//        --benchmark_report_aggregates_only=true
//      build/bin/codec_bench --benchmark_filter='As/' (the formats only)
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <string>

#include "common/fed/schedule.h"
#include "common/learn/compress.h"
#include "common/sparse/codec.h"
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

// Args: d, density in per mille, value type.
struct Setup {
  int64_t d;
  int64_t k;
  ValueType type;
};

Setup Parse(const benchmark::State& state) {
  const int64_t d = state.range(0);
  return {d, KForDensity(d, state.range(1) / 1000.0),
          static_cast<ValueType>(state.range(2))};
}

void AddPlanCounters(benchmark::State& state, const Setup& s,
                     const EncodingPlan& plan) {
  const double idx_bits = 8.0 * plan.index_bytes / s.k;
  const double floor_bits = EntropyFloorBits(s.d, s.k) / s.k;
  state.counters["bytes"] = static_cast<double>(plan.total());
  state.counters["idx_bits/k"] = idx_bits;
  state.counters["floor_bits/k"] = floor_bits;
  if (floor_bits > 0) state.counters["idx/floor"] = idx_bits / floor_bits;
  state.counters["dense_GB/s"] = benchmark::Counter(
      4e-9 * static_cast<double>(s.d) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.SetItemsProcessed(state.iterations() * s.d);
  state.SetLabel(std::string(ValueTypeName(s.type)) + " " +
                 IndexFormatName(plan.format));
}

void AddCounters(benchmark::State& state, const Setup& s,
                 const SparseDelta& sparse) {
  AddPlanCounters(state, s, PlanEncoding(s.d, sparse.indices, s.type));
}

SparseDelta MustTopK(benchmark::State& state, const at::Tensor& x,
                     int64_t k) {
  auto r = TopK(x, k);
  if (!r.ok()) {
    state.SkipWithError(std::string(r.status().message()).c_str());
    return {};
  }
  return *std::move(r);
}

void BM_TopKEncode(benchmark::State& state) {
  const Setup s = Parse(state);
  const at::Tensor& x = Delta(s.d);
  SparseDelta sparse;
  std::string out;
  for (auto _ : state) {
    sparse = MustTopK(state, x, s.k);
    if (!EncodeSparseDeltaTo(sparse, s.type, &out).ok()) {
      state.SkipWithError("encode failed");
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  AddCounters(state, s, sparse);
}

void BM_TopK(benchmark::State& state) {
  const Setup s = Parse(state);
  const at::Tensor& x = Delta(s.d);
  SparseDelta sparse;
  for (auto _ : state) {
    sparse = MustTopK(state, x, s.k);
    benchmark::DoNotOptimize(sparse.indices.data());
  }
  AddCounters(state, s, sparse);
}

// The baselines the radix select is measured against, in the same run:
// torch.topk of |x| (unsorted, as PyTorch users call it) and our previous
// tensor-ops path (kthvalue + tie fix-up), which CUDA still takes.
void BM_TorchTopK(benchmark::State& state) {
  const Setup s = Parse(state);
  const at::Tensor& x = Delta(s.d);
  for (auto _ : state) {
    auto r = at::topk(x.abs(), s.k, /*dim=*/0, /*largest=*/true,
                      /*sorted=*/false);
    benchmark::DoNotOptimize(std::get<1>(r).data_ptr());
  }
  state.SetItemsProcessed(state.iterations() * s.d);
}

// The radix select alone, without TopK's input checks.
void BM_RadixTopKRaw(benchmark::State& state) {
  const Setup s = Parse(state);
  const at::Tensor& x = Delta(s.d);
  for (auto _ : state) {
    SparseDelta r;
    RadixTopK(x.data_ptr<float>(), s.d, s.k, &r);
    benchmark::DoNotOptimize(r.indices.data());
  }
  state.SetItemsProcessed(state.iterations() * s.d);
}

void BM_TopKTensorOps(benchmark::State& state) {
  const Setup s = Parse(state);
  const at::Tensor& x = Delta(s.d);
  for (auto _ : state) {
    auto r = TopKWithTensorOps(x, s.k);
    benchmark::DoNotOptimize(r->indices.data());
  }
  state.SetItemsProcessed(state.iterations() * s.d);
}

void BM_Encode(benchmark::State& state) {
  const Setup s = Parse(state);
  const SparseDelta sparse = MustTopK(state, Delta(s.d), s.k);
  std::string out;
  for (auto _ : state) {
    if (!EncodeSparseDeltaTo(sparse, s.type, &out).ok()) {
      state.SkipWithError("encode failed");
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  AddCounters(state, s, sparse);
}

void BM_Decode(benchmark::State& state) {
  const Setup s = Parse(state);
  const SparseDelta sparse = MustTopK(state, Delta(s.d), s.k);
  const std::string enc = EncodeSparseDelta(sparse, s.type).value();
  for (auto _ : state) {
    auto dec = DecodeSparseDelta(enc, s.d, s.k);
    if (!dec.ok()) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(dec->values.data());
  }
  AddCounters(state, s, sparse);
}

// Args: d, density in per mille, index format (fp32 values).
IndexFormat FormatArg(const benchmark::State& state) {
  return static_cast<IndexFormat>(state.range(2));
}

Setup ParseAs(const benchmark::State& state) {
  const int64_t d = state.range(0);
  return {d, KForDensity(d, state.range(1) / 1000.0), ValueType::kFp32};
}

void BM_EncodeAs(benchmark::State& state) {
  const Setup s = ParseAs(state);
  const IndexFormat format = FormatArg(state);
  const SparseDelta sparse = MustTopK(state, Delta(s.d), s.k);
  std::string out;
  for (auto _ : state) {
    if (!EncodeSparseDeltaAs(sparse, s.type, format, &out).ok()) {
      state.SkipWithError("encode failed");
      break;
    }
    benchmark::DoNotOptimize(out.data());
  }
  AddPlanCounters(state, s,
                  PlanEncodingAs(s.d, sparse.indices, s.type, format).value());
}

void BM_DecodeAs(benchmark::State& state) {
  const Setup s = ParseAs(state);
  const IndexFormat format = FormatArg(state);
  const SparseDelta sparse = MustTopK(state, Delta(s.d), s.k);
  std::string enc;
  if (!EncodeSparseDeltaAs(sparse, s.type, format, &enc).ok()) {
    state.SkipWithError("encode failed");
    return;
  }
  for (auto _ : state) {
    auto dec = DecodeSparseDelta(enc, s.d, s.k);
    if (!dec.ok()) {
      state.SkipWithError("decode failed");
      break;
    }
    benchmark::DoNotOptimize(dec->values.data());
  }
  AddPlanCounters(state, s,
                  PlanEncodingAs(s.d, sparse.indices, s.type, format).value());
}

void Formats(benchmark::internal::Benchmark* b) {
  b->ArgNames({"d", "permille", "format"});
  for (int64_t d : {582026, 11200000}) {
    for (int64_t permille : {100, 20}) {
      for (IndexFormat f : {IndexFormat::kVarintGaps, IndexFormat::kBitmap,
                            IndexFormat::kGolombRice, IndexFormat::kEliasFano}) {
        b->Args({d, permille, static_cast<int64_t>(f)});
      }
    }
    // A dense delta (k = d): values only.
    b->Args({d, 1000, static_cast<int64_t>(IndexFormat::kDense)});
  }
  // Rates per CPU second of the benchmark's thread, not wall time: on a
  // shared machine that is what one core does.
  b->Unit(benchmark::kMillisecond)->MinTime(0.3);
}

void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"d", "permille", "type"});
  for (int64_t d : {582026, 11200000}) {
    for (int64_t permille : {100, 20}) {
      b->Args({d, permille, static_cast<int64_t>(ValueType::kFp32)});
    }
  }
  b->Unit(benchmark::kMillisecond)->MinTime(0.3)->UseRealTime();
}

void SizesAllTypes(benchmark::internal::Benchmark* b) {
  Sizes(b);
  for (int64_t d : {582026, 11200000}) {
    b->Args({d, 100, static_cast<int64_t>(ValueType::kFp16)});
  }
}

BENCHMARK(BM_TopKEncode)->Apply(SizesAllTypes);
BENCHMARK(BM_TopK)->Apply(Sizes);
BENCHMARK(BM_TorchTopK)->Apply(Sizes);
BENCHMARK(BM_TopKTensorOps)->Apply(Sizes);
BENCHMARK(BM_RadixTopKRaw)->Apply(Sizes);
BENCHMARK(BM_Encode)->Apply(SizesAllTypes);
BENCHMARK(BM_Decode)->Apply(SizesAllTypes);
BENCHMARK(BM_EncodeAs)->Apply(Formats);
BENCHMARK(BM_DecodeAs)->Apply(Formats);

}  // namespace
}  // namespace shefl

BENCHMARK_MAIN();
