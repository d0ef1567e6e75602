// How fast does the coordinator evaluate? EvaluateEnsemble (the path
// server/round/evaluator.cc takes) over the paper CNN's 5 members on fake
// Fashion-MNIST images, on one thread, for each eval.batch_size and
// eval.precision given, in alternating sittings; prints samples per second
// (medians). Run: build/bin/eval_bench [samples] [sittings]
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bench_support.h"
#include "common/learn/device.h"
#include "common/learn/evaluate.h"
#include "common/learn/models.h"
#include "common/learn/precision.h"
#include "common/learn_stacked/stacked_members.h"

namespace {

constexpr char kUsage[] =
    "usage: eval_bench [SAMPLES] [SITTINGS]\n"
    "  Evaluates 5 paper CNNs on SAMPLES fake 28x28 images (default 4000)\n"
    "  on one thread, with eval.batch_size 64, 256 and 1000, in fp32 and\n"
    "  (on a CPU with AVX512_BF16 or AMX) bf16, in alternating sittings\n"
    "  (default 3); prints ensemble samples per second per setting, the\n"
    "  median of the sittings.\n";

double Seconds(const std::vector<std::shared_ptr<shefl::Net>>& nets,
               const shefl::Dataset& data, int64_t batch, const std::string& precision) {
  shefl::AutocastScope autocast(precision, c10::Device(c10::kCPU));
  const auto start = std::chrono::steady_clock::now();
  auto r = shefl::EvaluateEnsemble(nets, data, batch, 0, c10::Device(c10::kCPU));
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", std::string(r.status().message()).c_str());
    std::exit(1);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The same evaluation with the 5 members stacked into one computation
// (common/learn_stacked/stacked_members.h: grouped convolutions, batched
// linear layers), log-probabilities only: what a stacked EvaluateEnsemble
// would cost.
double StackedSeconds(const std::vector<std::shared_ptr<shefl::Net>>& nets,
                      const shefl::Dataset& data, int64_t batch,
                      const std::string& precision) {
  shefl::AutocastScope autocast(precision, c10::Device(c10::kCPU));
  const auto start = std::chrono::steady_clock::now();
  auto stacked = shefl::StackedMembers::Create(nets, c10::Device(c10::kCPU));
  if (!stacked.ok()) {
    std::fprintf(stderr, "%s\n", std::string(stacked.status().message()).c_str());
    std::exit(1);
  }
  (*stacked)->train(false);
  c10::NoGradGuard no_grad;
  double sink = 0;
  for (int64_t b = 0; b < data.x.size(0); b += batch) {
    at::Tensor x = data.x.slice(0, b, std::min(data.x.size(0), b + batch));
    sink += (*stacked)->Forward(x).to(at::kFloat).log_softmax(2)[0][0][0].item<float>();
  }
  if (sink == 12345.678) std::printf(" ");
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  const shefl::bench::BenchArgs args = shefl::bench::ParseBenchArgs(argc, argv, kUsage);
  if (args.exit_code >= 0) return args.exit_code;
  const int64_t n = args.IntArg(0, 4000);
  const int sittings = static_cast<int>(args.IntArg(1, 3));
  shefl::ConfigureThreads(1);
  shefl::Dataset data;
  data.x = at::randn({n, 1, 28, 28});
  data.y = at::randint(0, 10, {n}, at::kLong);
  data.num_classes = 10;
  std::vector<std::shared_ptr<shefl::Net>> nets;
  for (int m = 0; m < 5; ++m) {
    auto net = shefl::MakeInitialisedModel("cnn", {1, 28, 28, 0, 0, 10}, 1, m);
    if (!net.ok()) return 1;
    nets.push_back(*net);
  }
  std::vector<std::string> precisions = {"fp32"};
  if (shefl::CpuHasBf16()) precisions.push_back("bf16");
  const std::vector<int64_t> batches = {64, 256, 1000};
  Seconds(nets, data, 256, "fp32");  // warm-up
  for (const std::string& p : precisions)
    for (int64_t b : batches) {
      std::vector<double> rates;
      for (int s = 0; s < sittings; ++s)
        rates.push_back(5.0 * static_cast<double>(n) / Seconds(nets, data, b, p));
      std::printf("%s batch %4lld: %8.0f member-samples/s (median of %d)\n", p.c_str(),
                  static_cast<long long>(b), shefl::bench::Median(rates), sittings);
    }
  for (const std::string& p : precisions) {
    std::vector<double> plain, stacked;
    // Not alternated: after a stacked run the plain one ran up to 8x
    // slower in this process (oneDNN's primitive cache, we suspect), so
    // every plain sitting goes first.
    for (int s = 0; s < sittings; ++s)
      plain.push_back(5.0 * static_cast<double>(n) / Seconds(nets, data, 256, p));
    for (int s = 0; s < sittings; ++s)
      stacked.push_back(5.0 * static_cast<double>(n) / StackedSeconds(nets, data, 256, p));
    const double one_by_one = shefl::bench::Median(plain);
    const double together = shefl::bench::Median(stacked);
    std::printf("%s batch  256: members one by one %8.0f, stacked %8.0f member-samples/s "
                "(%.2fx; median of %d)\n",
                p.c_str(), one_by_one, together, together / one_by_one, sittings);
  }
  if (precisions.size() == 1) std::printf("bf16: not on this CPU (no AVX512_BF16 or AMX)\n");
  return 0;
}
