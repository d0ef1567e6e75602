// The stacked loop of CohortTrain (common/learn_stacked/cohort_train.h):
// every lane still training takes one step at once; lanes that have taken
// all their steps leave the stack, written back into their own networks.
#include <ATen/Functions.h>
#include <ATen/core/Reduction.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/learn/precision.h"
#include "common/learn/torch_call.h"
#include "common/learn_stacked/cohort_lanes.h"
#include "common/learn_stacked/stacked_members.h"
#include "common/learn_stacked/stacked_train.h"
#include "common/learn_stacked/step_graph.h"

namespace shefl {
namespace cohort_internal {
namespace {

using Results = std::vector<std::optional<absl::StatusOr<TrainStats>>>;

// One step's batches of every lane in the stack.
struct StepBatch {
  // [T*B + T] on the device: each lane's B rows of the shard, then its
  // (task, pass) row of the loss books.
  at::Tensor meta;
  int64_t t = 0;         // T
  int64_t full = 0;      // B
  bool all_full = true;  // no lane padded: the plain mean applies
  at::Tensor mask;       // [T, B] 1 real / 0 padding (unless all_full)
  at::Tensor counts;     // [T] real samples (unless all_full)
  bool uniform_lr = true;
  double lr = 0;         // every lane's lr when uniform_lr
  at::Tensor lrs;        // [T] otherwise
};

std::vector<double> ToHost(const at::Tensor& t) {
  at::Tensor c = t.detach().to(c10::kCPU, at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(),
                             c.data_ptr<double>() + c.numel());
}

class Stack {
 public:
  Stack(std::vector<Lane> lanes, const CohortShard& shard,
        std::vector<CohortTask>& tasks, const TrainConfig& cfg,
        c10::Device dev, bool graphs, Results& results)
      : lanes_(std::move(lanes)), shard_(shard), tasks_(tasks), cfg_(cfg),
        dev_(dev), graphs_(graphs && dev.is_cuda() && HasStepGraphs()),
        results_(results) {}

  absl::Status Run() {
    SHEFL_RETURN_IF_ERROR(Begin());
    for (bool first = true;; first = false) {
      std::vector<train_internal::BatchRange> ranges;
      SHEFL_RETURN_IF_ERROR(Advance(&ranges));
      if (lanes_.empty()) return absl::OkStatus();
      const StepBatch b = Gather(ranges);
      if (first) {
        Firsts(StepOn(b.meta, b));
      } else if (!GraphStep(b)) {
        StepOn(b.meta, b);
      }
    }
  }

 private:
  absl::Status Begin() {
    std::vector<std::shared_ptr<Net>> nets;
    std::vector<at::Tensor> flats;
    int64_t passes = 1;
    for (const Lane& lane : lanes_) {
      nets.push_back(tasks_[lane.task].net);
      nets.back()->to(dev_);
      nets.back()->train(true);
      flats.push_back(lane.p.prox_reference);
      passes = std::max(passes, lane.MaxPasses());
    }
    auto net = StackedMembers::Create(std::move(nets), dev_);
    if (!net.ok()) return net.status();
    net_ = *std::move(net);
    net_->train(true);
    params_ = net_->parameters();
    momentum_.assign(params_.size(), at::Tensor());
    if (cfg_.prox_mu > 0) {
      auto refs = net_->StackReferences(flats);
      if (!refs.ok()) return refs.status();
      refs_ = *std::move(refs);
    }
    max_passes_ = passes;
    const auto opts = shard_.x.options().dtype(at::kFloat);
    books_ = at::zeros({static_cast<int64_t>(tasks_.size()) * passes}, opts);
    firsts_ = at::zeros({static_cast<int64_t>(tasks_.size())}, opts);
    return absl::OkStatus();
  }

  // Every lane's next batch; the lanes that have none left leave first.
  absl::Status Advance(std::vector<train_internal::BatchRange>* ranges) {
    std::vector<int64_t> keep, leaving;
    for (size_t i = 0; i < lanes_.size(); ++i) {
      std::optional<train_internal::BatchRange> r = lanes_[i].Next();
      if (r) {
        ranges->push_back(*r);
        keep.push_back(static_cast<int64_t>(i));
      } else {
        leaving.push_back(static_cast<int64_t>(i));
      }
    }
    return leaving.empty() ? absl::OkStatus() : Leave(keep, leaving);
  }

  // Writes the leaving lanes back, then gives them their results.
  absl::Status Leave(const std::vector<int64_t>& keep,
                     const std::vector<int64_t>& leaving) {
    graph_.reset();  // it holds the stack's tensors, which change now
    const std::vector<double> books = ToHost(books_);
    const std::vector<double> firsts = ToHost(firsts_);
    const int64_t m = net_->size();
    SHEFL_RETURN_IF_ERROR(net_->Keep(keep));
    for (int64_t i : leaving) {
      const Lane& lane = lanes_[i];
      const auto row = books.begin() + lane.task * max_passes_;
      results_[lane.task] = LaneStats(lane, {row, row + max_passes_},
                                      firsts[lane.task], 0);
    }
    for (size_t j = 0; j < params_.size(); ++j) {
      if (momentum_[j].defined() && !keep.empty())
        momentum_[j] = StackedMembers::KeepRows(momentum_[j], m, keep);
      if (!refs_.empty() && !keep.empty())
        refs_[j] = StackedMembers::KeepRows(refs_[j], m, keep);
    }
    params_ = net_->parameters();
    std::vector<Lane> kept;
    for (int64_t i : keep) kept.push_back(std::move(lanes_[i]));
    lanes_ = std::move(kept);
    return absl::OkStatus();
  }

  StepBatch Gather(const std::vector<train_internal::BatchRange>& ranges);
  void PerLane(const std::vector<train_internal::BatchRange>& ranges,
               const std::vector<float>& lrs, StepBatch* b) const;
  at::Tensor StepOn(const at::Tensor& meta, const StepBatch& b);
  at::Tensor Losses(const at::Tensor& x, const at::Tensor& y,
                    const StepBatch& b);
  void OptimiserStep(const StepBatch& b);
  void Book(const at::Tensor& losses, const at::Tensor& rows,
            const StepBatch& b);
  void Firsts(const at::Tensor& losses);
  bool GraphStep(const StepBatch& b);
  bool StartGraph(const StepBatch& b);

  std::vector<Lane> lanes_;  // in stack order
  const CohortShard& shard_;
  std::vector<CohortTask>& tasks_;
  const TrainConfig& cfg_;
  const c10::Device dev_;
  bool graphs_;  // CUDA graphs may be recorded
  Results& results_;
  // The graph of the current run of like steps (same T, B, lr), recorded
  // on static_meta_ after kWarmups eager calls; reset when the run ends.
  std::unique_ptr<StepGraph> graph_;
  at::Tensor static_meta_;
  int64_t graph_t_ = 0, graph_full_ = 0, graph_calls_ = 0, graph_left_ = 0;
  double graph_lr_ = 0;
  std::unique_ptr<StackedMembers> net_;
  std::vector<at::Tensor> params_, momentum_, refs_;
  at::Tensor books_;   // [tasks x passes]: loss x batch size, per pass
  at::Tensor firsts_;  // [tasks]: the first step's losses
  int64_t max_passes_ = 1;
};

// One host-to-device copy of the rows (a short batch repeats its last
// real row) and of the book rows; a padded step, or lrs that differ, add
// a second (PerLane).
StepBatch Stack::Gather(const std::vector<train_internal::BatchRange>& ranges) {
  StepBatch b;
  b.t = static_cast<int64_t>(ranges.size());
  for (const auto& r : ranges) b.full = std::max(b.full, r.second - r.first);
  std::vector<int64_t> rows(b.t * b.full + b.t);
  std::vector<float> lrs(b.t);
  for (int64_t i = 0; i < b.t; ++i) {
    const Lane& lane = lanes_[i];
    const int64_t n = ranges[i].second - ranges[i].first;
    for (int64_t j = 0; j < b.full; ++j)
      rows[i * b.full + j] = lane.ids[ranges[i].first + std::min(j, n - 1)];
    rows[b.t * b.full + i] =
        static_cast<int64_t>(lane.task) * max_passes_ + lane.pass;
    b.all_full = b.all_full && n == b.full;
    const double lr = train_internal::StepLearningRate(cfg_, lane.p, lane.pass,
                                                       lane.steps - 1);
    if (i == 0) b.lr = lr;
    lrs[i] = static_cast<float>(lr);
    b.uniform_lr = b.uniform_lr && lr == b.lr;
  }
  b.meta = at::tensor(rows, at::kLong).to(dev_);
  if (!b.all_full || !b.uniform_lr) PerLane(ranges, lrs, &b);
  return b;
}

// The mask [T, B], real counts [T] and lrs [T] of a step that needs them.
void Stack::PerLane(const std::vector<train_internal::BatchRange>& ranges,
                    const std::vector<float>& lrs, StepBatch* b) const {
  std::vector<float> f;
  f.reserve(b->t * b->full + 2 * b->t);
  for (const auto& r : ranges)
    for (int64_t j = 0; j < b->full; ++j)
      f.push_back(j < r.second - r.first ? 1.f : 0.f);
  for (const auto& r : ranges) f.push_back(static_cast<float>(r.second - r.first));
  f.insert(f.end(), lrs.begin(), lrs.end());
  const at::Tensor d = at::tensor(f, at::kFloat).to(dev_);
  b->mask = d.narrow(0, 0, b->t * b->full).view({b->t, b->full});
  b->counts = d.narrow(0, b->t * b->full, b->t);
  b->lrs = d.narrow(0, b->t * b->full + b->t, b->t);
}

// One step of every lane on the rows `meta` names: forward, losses,
// backward, the optimiser and the books. Returns the lanes' losses [T].
// Every tensor it reads lives across steps or comes from `meta`, so a
// CUDA graph may record it.
at::Tensor Stack::StepOn(const at::Tensor& meta, const StepBatch& b) {
  for (at::Tensor& p : params_) p.mutable_grad().reset();
  const at::Tensor rows = meta.narrow(0, 0, b.t * b.full);
  std::vector<int64_t> shape = {b.t, b.full};
  for (int64_t d = 1; d < shard_.x.dim(); ++d) shape.push_back(shard_.x.size(d));
  const at::Tensor x = shard_.x.index_select(0, rows).view(shape);
  const at::Tensor y = shard_.y.index_select(0, rows).view({b.t, b.full});
  at::Tensor losses;  // [T]
  {
    AutocastScope autocast(cfg_.precision, dev_);  // bf16: forward, loss
    losses = Losses(x, y, b).to(at::kFloat);
  }
  at::Tensor total = losses.sum();
  if (!refs_.empty())
    total = total + StackedProxLoss(params_, refs_, cfg_.prox_mu);
  total.backward();
  OptimiserStep(b);
  Book(losses.detach(), meta.narrow(0, b.t * b.full, b.t), b);
  return losses.detach();
}

// Each lane's mean cross-entropy over its own real samples.
at::Tensor Stack::Losses(const at::Tensor& x, const at::Tensor& y,
                         const StepBatch& b) {
  const at::Tensor logits = net_->ForwardEach(x);  // [T, B, K]
  const int64_t t = logits.size(0), k = logits.size(2);
  const at::Tensor ce =
      at::cross_entropy_loss(logits.reshape({t * b.full, k}),
                             y.reshape({t * b.full}), {},
                             at::Reduction::None)
          .view({t, b.full});
  if (b.all_full) return ce.mean(1);
  return ce.mul(b.mask).sum(1).div(b.counts);
}

// SGD as torch::optim::SGD steps it (d = g + wd p; momentum without
// dampening; p -= lr d), over the stack: one foreach call for all
// parameters in the common case (no momentum, one lr).
void Stack::OptimiserStep(const StepBatch& b) {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : params_) grads.push_back(p.grad());
  const double wd = cfg_.weight_decay, mom = cfg_.momentum;
  if (mom == 0 && b.uniform_lr) {
    if (wd != 0) grads = at::_foreach_add(grads, params_, wd);
    at::_foreach_add_(params_, grads, -b.lr);
    return;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    at::Tensor d = wd != 0 ? grads[i].add(params_[i], wd) : grads[i];
    if (mom != 0) {
      if (!momentum_[i].defined()) {
        momentum_[i] = d.clone();
      } else {
        momentum_[i].mul_(mom).add_(d);
      }
      d = momentum_[i];
    }
    if (b.uniform_lr) {
      params_[i].add_(d, -b.lr);
    } else {
      params_[i].addcmul_(d, net_->PerMember(b.lrs, params_[i]), -1);
    }
  }
}

// LocalTrain's books: the sum of loss x batch size per pass, in float as
// it keeps them, and the first step's loss.
void Stack::Book(const at::Tensor& losses, const at::Tensor& rows,
                 const StepBatch& b) {
  const at::Tensor weighted =
      b.all_full ? losses * static_cast<double>(b.full) : losses * b.counts;
  books_.index_add_(0, rows, weighted);
}

void Stack::Firsts(const at::Tensor& losses) {
  std::vector<int64_t> tasks;
  for (const Lane& lane : lanes_) tasks.push_back(static_cast<int64_t>(lane.task));
  firsts_.index_copy_(0, at::tensor(tasks, at::kLong).to(dev_), losses);
}

// A step as a replay of the recorded graph where the steps around it are
// alike (every lane's batch full, one lr, T unchanged) for at least
// kMinGraphRun steps: kWarmups eager calls on the graph's stream, one
// recording, then replays. False: the caller steps eagerly.
constexpr int64_t kWarmups = 2;
constexpr int64_t kMinGraphRun = 8;

bool Stack::GraphStep(const StepBatch& b) {
  const bool alike = graphs_ && b.all_full && b.uniform_lr &&
                     (cfg_.momentum == 0 || momentum_[0].defined());
  if (graph_ && (!alike || b.t != graph_t_ || b.full != graph_full_ ||
                 b.lr != graph_lr_ || graph_left_ <= 0))
    graph_.reset();
  if (!alike || (!graph_ && !StartGraph(b))) return false;
  static_meta_.copy_(b.meta);
  const StepBatch fixed = b;  // the recording keeps T, B and lr
  auto body = [this, fixed] { StepOn(static_meta_, fixed); };
  if (graph_calls_ < kWarmups) {
    graph_->Warmup(body);
  } else if (graph_calls_ == kWarmups) {
    if (absl::Status st = graph_->Capture(body); !st.ok()) {
      LogLine("cohort", absl::StrCat(st.message(), "; stepping eagerly"));
      graph_.reset();
      graphs_ = false;
      return false;  // nothing of the recorded step ran
    }
    graph_->Replay();
  } else {
    graph_->Replay();
  }
  ++graph_calls_;
  --graph_left_;
  return true;
}

// A new graph where the coming run of like steps is long enough.
bool Stack::StartGraph(const StepBatch& b) {
  int64_t run = 1 << 20;
  for (const Lane& lane : lanes_)
    run = std::min(run, 1 + lane.FullStepsAhead(b.full, 1 << 20));
  if (run < kMinGraphRun) return false;
  graph_ = MakeStepGraph(dev_);
  if (!graph_) {
    graphs_ = false;
    return false;
  }
  static_meta_ = at::empty_like(b.meta);
  graph_t_ = b.t;
  graph_full_ = b.full;
  graph_lr_ = b.lr;
  graph_calls_ = 0;
  graph_left_ = run;
  return true;
}

}  // namespace

absl::Status RunStack(std::vector<Lane> lanes, const CohortShard& shard,
                      std::vector<CohortTask>& tasks, const TrainConfig& cfg,
                      c10::Device device, bool cuda_graphs,
                      Results& results) {
  return TorchCallCatchAll("cohort stack", [&] {
    Stack stack(std::move(lanes), shard, tasks, cfg, device, cuda_graphs,
                results);
    return stack.Run();
  });
}

}  // namespace cohort_internal
}  // namespace shefl
