// Ensemble-native training (docs/DESIGN.md, "Ensemble-native training and
// the round on a GPU"): how many member-steps per second do an HPC's M
// members train at, stacked into one computation
// (common/learn_stacked/stacked_members.h) against M sequential members
// with the same batch order (LocalTrainMany with StackedPath::kOff)?
// Prints, per model and M, the medians of several alternating sittings and
// the ratio stacked / sequential (target on a GPU: >= 3x for cnn).
//
// Run: build/bin/stacked_train_bench [cpu|cuda] [steps] [sittings]
//                                     [models] [members]
//   e.g. stacked_train_bench cuda 50 5 cnn,resnet18 2,5,10
// Defaults: cpu 20 5 cnn,resnet18 2,5,10. Shapes as in the paper configs:
// cnn on 28x28x1 (FMNIST), resnet18 on 32x32x3 (CIFAR-10), batch 16
// (configs/*.yaml), SGD momentum 0.5 as the paper runs. On CPU the time
// is the thread's CPU time with one torch thread (the machine may be
// shared); on CUDA the wall time (each call ends in a host read of the
// losses, which waits for the device).
#include <ATen/Context.h>
#include <ATen/ops/randint.h>
#include <ATen/ops/randn.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "bench/bench_support.h"
#include "common/core/config.h"
#include "common/learn/device.h"
#include "common/learn/models.h"
#include "common/learn/train.h"
#include "common/learn_stacked/stacked_train.h"

namespace {

using shefl::Dataset;
using shefl::bench::Median;
using shefl::bench::ThreadCpuSeconds;
using shefl::bench::WallSeconds;

struct Bench {
  std::string model;
  shefl::ModelShape shape;
  Dataset data;  // steps * batch samples: one pass is `steps` steps
  std::vector<int64_t> idx;
};

Bench MakeBench(const std::string& model, int64_t steps, int64_t batch,
                c10::Device dev) {
  Bench b;
  b.model = model;
  const bool cifar = model != "cnn" && model != "mlp";
  b.shape = cifar ? shefl::ModelShape{3, 32, 32, 0, 0, 10}
                  : shefl::ModelShape{1, 28, 28, 0, 0, 10};
  const int64_t n = steps * batch;
  b.data.name = model;
  b.data.x = at::randn({n, b.shape.in_channels, b.shape.height, b.shape.width})
                 .to(dev);
  b.data.y = at::randint(0, 10, {n}, at::kLong).to(dev);
  b.data.num_classes = 10;
  for (int64_t i = 0; i < n; ++i) b.idx.push_back(i);
  return b;
}

// Seconds (CPU: thread CPU; CUDA: wall) for M members training `steps`
// steps each, stacked or one after the other.
double TimeRun(const Bench& b, int64_t m, int64_t steps, bool stacked,
               c10::Device dev) {
  std::vector<std::shared_ptr<shefl::Net>> members;
  for (int64_t k = 0; k < m; ++k) {
    auto net = shefl::MakeInitialisedModel(b.model, b.shape, 7, k);
    if (!net.ok()) std::abort();
    (*net)->to(dev);
    members.push_back(*net);
  }
  shefl::TrainConfig cfg;
  cfg.batch_size = 16;
  cfg.momentum = 0.5;
  shefl::LocalTrainParams p;
  p.steps = steps;
  p.device = dev;
  const bool cpu = dev.is_cpu();
  const double t0 = cpu ? ThreadCpuSeconds() : WallSeconds();
  auto st = shefl::LocalTrainMany(
      members, b.data, b.idx, cfg, p,
      stacked ? shefl::StackedPath::kOn : shefl::StackedPath::kOff);
  const double t1 = cpu ? ThreadCpuSeconds() : WallSeconds();
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.status().ToString().c_str());
    std::abort();
  }
  return t1 - t0;
}

template <typename T>
std::vector<T> ParseList(const std::string& s) {
  std::vector<T> out;
  for (absl::string_view part : absl::StrSplit(s, ',')) {
    if constexpr (std::is_same_v<T, std::string>) {
      out.emplace_back(part);
    } else {
      int64_t v = 0;
      if (!absl::SimpleAtoi(part, &v) || v < 1) std::abort();
      out.push_back(v);
    }
  }
  return out;
}

}  // namespace

constexpr char kUsage[] =
    "usage: stacked_train_bench [cpu|cuda|cuda:N] [STEPS] [SITTINGS] "
    "[MODELS] [Ms]\n"
    "  Member-steps per second of an HPC's M members trained stacked in\n"
    "  one computation against M sequential trainings with the same batch\n"
    "  order, per model and M, medians of alternating sittings, and the\n"
    "  ratio stacked / sequential.\n"
    "  Defaults: cpu 20 5 cnn,resnet18 2,5,10 (e.g. cuda 50 5 cnn 2,5).\n"
    "  cuda needs a build with a CUDA LibTorch and a GPU.\n";

int main(int argc, char** argv) {
  const shefl::bench::BenchArgs args = shefl::bench::ParseBenchArgs(argc, argv, kUsage);
  if (args.exit_code >= 0) return args.exit_code;
  const std::string spec = args.Arg(0, "cpu");
  const int64_t steps = args.IntArg(1, 20);
  const int sittings = static_cast<int>(args.IntArg(2, 5));
  const auto models = ParseList<std::string>(args.Arg(3, "cnn,resnet18"));
  const auto ms = ParseList<int64_t>(args.Arg(4, "2,5,10"));
  auto dev = shefl::ResolveDevice(spec);
  if (!dev.ok()) {
    std::fprintf(stderr, "%s\n", dev.status().ToString().c_str());
    return 2;
  }
  if (dev->is_cpu()) shefl::ConfigureThreads(1);
  std::printf("device %s, %lld steps a run, %d sittings, batch 16, %s time\n",
              dev->str().c_str(), static_cast<long long>(steps), sittings,
              dev->is_cpu() ? "thread CPU" : "wall");
  for (const std::string& model : models) {
    const Bench b = MakeBench(model, steps, 16, *dev);
    for (int64_t m : ms) {
      TimeRun(b, m, 2, false, *dev);  // warm-up: allocator, kernel choice
      TimeRun(b, m, 2, true, *dev);
      std::vector<double> seq, stk;
      for (int s = 0; s < sittings; ++s) {
        seq.push_back(TimeRun(b, m, steps, false, *dev));
        stk.push_back(TimeRun(b, m, steps, true, *dev));
      }
      const double member_steps = static_cast<double>(m * steps);
      const double a = Median(seq), t = Median(stk);
      std::printf(
          "%-9s M=%-3lld sequential %9.1f member-steps/s (%.2f ms each), "
          "stacked %9.1f member-steps/s (%.2f ms each): %.2fx\n",
          model.c_str(), static_cast<long long>(m), member_steps / a,
          1e3 * a / member_steps, member_steps / t, 1e3 * t / member_steps,
          a / t);
      std::fflush(stdout);
    }
  }
  return 0;
}
