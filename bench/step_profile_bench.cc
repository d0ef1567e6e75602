// Where one local training step of the paper CNN spends its time on one
// CPU thread, the step as TrainLoop (common/learn/train.cc) takes it:
// the batch gathered, zero_grad, the forward pass and the loss under the
// precision's autocast, backward, the SGD step. Every ATen op and every
// autograd node is timed through RecordFunction (what torch's profiler
// reads), and the bench prints:
//   - the step's wall time without the timer (the figure to quote) and with
//     it (the timer's own cost is the difference);
//   - the phases: batch, zero_grad, forward (by layer: the top-level ops in
//     call order), backward (by autograd node, in the order the engine ran
//     them), optimiser;
//   - the ops by self time (time in an op less the ops it called), the
//     table torch.profiler prints as "Self CPU".
// Run: build/bin/step_profile_bench [--precision=fp32|bf16] [--steps=N]
//      [--batch=B] [--top=K] [--sgd=torch|lean] [--malloc=tuned|glibc]
// Synthetic Fashion-MNIST-shaped data (timings do not depend on values).
#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bench/bench_support.h"
#include "common/core/malloc_tuning.h"
#include "common/learn/lean_sgd.h"
#include "common/learn/models.h"
#include "common/learn/precision.h"
#include "common/learn/train_internal.h"

namespace shefl {
namespace {

constexpr char kUsage[] =
    "usage: step_profile_bench [--precision=fp32|bf16] [--steps=N]\n"
    "                          [--batch=B] [--top=K] [--sgd=torch|lean]\n"
    "                          [--malloc=tuned|glibc]\n"
    "  One local step of the paper CNN on one thread, timed by phase, by\n"
    "  layer and autograd node, and by op (self time). Defaults: fp32,\n"
    "  400 steps (after 50 unmeasured), batch 16, top 25 ops, the SGD\n"
    "  step train.cc takes (lean: LeanSgd and DropGrads; torch: torch's\n"
    "  SGD and zero_grad), malloc as the daemon sets it (tuned;\n"
    "  common/core/malloc_tuning.h) or glibc's defaults.\n";

struct Options {
  std::string precision = "fp32";
  int64_t steps = 400;
  int64_t batch = 16;
  int64_t top = 25;
  std::string sgd = "lean";
  bool tune_malloc = true;
};

bench::BenchFlags Flags(Options* o) {
  return {{"--precision", bench::TextFlag(&o->precision)},
          {"--sgd", bench::OneOfFlag(&o->sgd, {"torch", "lean"})},
          {"--malloc",
           [o](const char* v) {
             std::string m;
             if (!bench::OneOfFlag(&m, {"tuned", "glibc"})(v)) return false;
             o->tune_malloc = m == "tuned";
             return true;
           }},
          {"--steps", bench::IntFlag(&o->steps, 1)},
          {"--batch", bench::IntFlag(&o->batch, 1)},
          {"--top", bench::IntFlag(&o->top, 0)}};
}

// ---- the timer: one thread, RecordFunction start/end pairs ----
struct Frame {
  double start = 0;
  double child = 0;   // time in records opened inside this one
  std::string name;
  bool node = false;  // an autograd node ("evaluate_function: X")
};
struct Tallies {
  std::map<std::string, double> self;     // op -> self seconds
  std::map<std::string, double> phase;    // phase -> seconds (top level)
  std::map<std::string, double> rows;     // "phase #k name" -> seconds
};
thread_local std::vector<Frame> t_frames;
std::string g_phase = "other";  // set by the step, read on its thread
Tallies* g_tally = nullptr;
std::map<std::string, int> g_ordinal;  // within the step

std::unique_ptr<at::ObserverContext> OnStart(const at::RecordFunction& fn) {
  Frame f;
  f.name = fn.name();
  f.node = !fn.operator_name().has_value();
  f.start = bench::WallSeconds();
  t_frames.push_back(std::move(f));
  return nullptr;
}

void OnEnd(const at::RecordFunction&, at::ObserverContext*) {
  if (t_frames.empty() || g_tally == nullptr) return;
  Frame f = std::move(t_frames.back());
  t_frames.pop_back();
  const double total = bench::WallSeconds() - f.start;
  if (!t_frames.empty()) t_frames.back().child += total;
  if (!f.node) g_tally->self[f.name] += total - f.child;
  // Rows: the top-level ops of the phases, and the autograd nodes (an op
  // inside a node is not top level: its node's frame is open).
  if (f.node || t_frames.empty()) {
    const std::string phase = f.node ? "backward" : g_phase;
    std::string name = f.name;
    const std::string node_prefix = "autograd::engine::evaluate_function: ";
    if (absl::StartsWith(name, node_prefix))
      name = name.substr(node_prefix.size());
    const int k = ++g_ordinal[phase];
    g_tally->rows[absl::StrCat(phase, " #", k < 10 ? "0" : "", k, " ", name)] +=
        total;
    g_tally->phase[phase] += total;
  }
}

// ---- the step, as TrainLoop takes it ----
struct Step {
  std::shared_ptr<Net> net;
  std::unique_ptr<torch::optim::Optimizer> opt;
  at::Tensor x, y, order;
  TrainConfig cfg;
  int64_t next = 0;
  bool lean = false;

  void Run(bool timed) {
    auto phase = [&](const char* p) { if (timed) g_phase = p; };
    phase("batch");
    const int64_t n = x.size(0), b = cfg.batch_size;
    if (next + b > n) next = 0;
    at::Tensor idx = order.slice(0, next, next + b);
    next += b;
    at::Tensor bx = x.index_select(0, idx), by = y.index_select(0, idx);
    phase("zero_grad");
    if (lean) DropGrads(*opt); else opt->zero_grad();
    phase("forward");
    at::Tensor loss;
    {
      AutocastScope autocast(cfg.precision, c10::Device(c10::kCPU));
      loss = at::cross_entropy_loss(net->forward(bx), by).to(at::kFloat);
    }
    phase("backward");
    loss.backward();
    phase("optimiser");
    opt->step();
    phase("other");
  }
};

int Main(int argc, char** argv) {
  Options o;
  const bench::BenchArgs args = bench::ParseBenchArgs(
      argc, argv, kUsage, Flags(&o), /*max_positional=*/0);
  if (args.exit_code >= 0) return args.exit_code;
  if (absl::Status st = CheckPrecision("--precision", o.precision,
                                       c10::Device(c10::kCPU));
      !st.ok()) {
    std::fprintf(stderr, "%s\n", st.ToString().c_str());
    return 2;
  }
  const std::string malloc_line =
      o.tune_malloc ? TuneMallocForTensors() : "malloc: glibc's defaults";
  at::set_num_threads(1);
  at::manual_seed(1);
  const ModelShape shape{1, 28, 28, 0, 0, 10};
  auto net = MakeInitialisedModel("cnn", shape, 1, 0);
  if (!net.ok()) {
    std::fprintf(stderr, "%s\n", net.status().ToString().c_str());
    return 1;
  }
  Step s;
  s.net = *net;
  s.net->train(true);
  s.cfg.batch_size = o.batch;
  s.cfg.lr = 0.01;
  s.cfg.weight_decay = 0.001;
  s.cfg.precision = o.precision;
  s.x = at::randn({4096, 1, 28, 28});
  s.y = at::randint(0, 10, {4096}, at::kLong);
  s.order = at::randperm(4096, at::kLong);
  s.lean = o.sgd == "lean";
  if (s.lean) {
    s.opt = train_internal::MakeOptimizer(s.cfg, s.cfg.lr, s.net->parameters());
  } else {
    s.opt = std::make_unique<torch::optim::SGD>(
        s.net->parameters(),
        torch::optim::SGDOptions(s.cfg.lr).weight_decay(s.cfg.weight_decay));
  }
  for (int i = 0; i < 50; ++i) s.Run(false);
  double t0 = bench::WallSeconds();
  for (int64_t i = 0; i < o.steps; ++i) s.Run(false);
  const double plain = (bench::WallSeconds() - t0) / o.steps;

  Tallies tally;
  g_tally = &tally;
  at::enableRecordFunction(true);
  auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&OnStart, &OnEnd)
          .scopes({at::RecordScope::FUNCTION}));
  t0 = bench::WallSeconds();
  for (int64_t i = 0; i < o.steps; ++i) {
    g_ordinal.clear();
    s.Run(true);
  }
  const double timed = (bench::WallSeconds() - t0) / o.steps;
  at::removeCallback(handle);
  g_tally = nullptr;

  const double ms = 1e3 / static_cast<double>(o.steps);
  std::printf("step_profile_bench: cnn, batch %lld, %s, sgd %s, 1 thread, %lld steps\n",
              static_cast<long long>(o.batch), o.precision.c_str(), o.sgd.c_str(),
              static_cast<long long>(o.steps));
  std::printf("%s\n", malloc_line.c_str());
  std::printf("step: %.3f ms without the timer, %.3f ms with it\n", plain * 1e3,
              timed * 1e3);
  std::printf("\n%-10s %10s %7s\n", "phase", "ms/step", "share");
  double sum = 0;
  for (const auto& [p, t] : tally.phase) sum += t;
  for (const auto& [p, t] : tally.phase)
    std::printf("%-10s %10.3f %6.1f%%\n", p.c_str(), t * ms, 100 * t / sum);
  std::printf("\n%-48s %10s\n", "phase #k (top-level op or autograd node)",
              "ms/step");
  for (const auto& [r, t] : tally.rows)
    if (t * ms >= 0.005) std::printf("%-48s %10.3f\n", r.c_str(), t * ms);
  std::vector<std::pair<std::string, double>> self(tally.self.begin(),
                                                   tally.self.end());
  std::sort(self.begin(), self.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  std::printf("\n%-40s %10s %7s\n", "op (self time)", "ms/step", "share");
  double self_sum = 0;
  for (const auto& [n, t] : self) self_sum += t;
  for (size_t i = 0; i < self.size() && static_cast<int64_t>(i) < o.top; ++i)
    std::printf("%-40s %10.3f %6.1f%%\n", self[i].first.c_str(),
                self[i].second * ms, 100 * self[i].second / self_sum);
  return 0;
}

}  // namespace
}  // namespace shefl

int main(int argc, char** argv) { return shefl::Main(argc, argv); }
