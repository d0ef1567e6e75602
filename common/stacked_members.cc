#include "common/stacked_members.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/optimizer.h>

#include <chrono>
#include <cmath>
#include <set>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/layout.h"
#include "common/rng.h"

namespace shefl {
namespace {

std::vector<std::string> ParamNames(const Net& model) {
  std::vector<std::string> out;
  for (const auto& item : model.named_parameters(/*recurse=*/true))
    out.push_back(item.key());
  return out;
}

// The module part of a tensor name: "layer1.0.conv1.weight" -> "layer1.0.conv1".
std::string ModuleOf(const std::string& tensor_name) {
  const size_t dot = tensor_name.rfind('.');
  return dot == std::string::npos ? "" : tensor_name.substr(0, dot);
}

std::string Shape(const at::Tensor& t) {
  return absl::StrCat("[", absl::StrJoin(t.sizes(), ", "), "]");
}

// The ResNet blocks "layer<s>.<b>" in order, from the parameter names.
std::vector<std::string> ResNetBlocks(const std::set<std::string>& names) {
  std::vector<std::string> blocks;
  for (int s = 1; s <= 4; ++s) {
    for (int b = 0;; ++b) {
      std::string prefix = absl::StrCat("layer", s, ".", b);
      if (names.count(prefix + ".conv1.weight") == 0) break;
      blocks.push_back(std::move(prefix));
    }
  }
  return blocks;
}

// The tensor names a CIFAR ResNet with `blocks` has (model_resnet.cc).
std::set<std::string> ResNetNames(const std::vector<std::string>& blocks,
                                  const std::set<std::string>& names) {
  std::set<std::string> want = {"conv1.weight", "bn1.weight", "bn1.bias",
                                "linear.weight", "linear.bias"};
  for (const std::string& b : blocks) {
    for (const char* t : {".conv1.weight", ".bn1.weight", ".bn1.bias",
                          ".conv2.weight", ".bn2.weight", ".bn2.bias"}) {
      want.insert(b + t);
    }
    if (names.count(b + ".shortcut_conv.weight")) {
      for (const char* t : {".shortcut_conv.weight", ".shortcut_bn.weight",
                            ".shortcut_bn.bias"}) {
        want.insert(b + t);
      }
    }
  }
  return want;
}

// LibTorch's option variants are c10::variant before 2.x and std::variant
// after; with std's functions in scope, lookup by argument finds either.
template <typename V>
const torch::ExpandingArray<2>* PaddingArray(const V& v) {
  using std::get_if;
  return get_if<torch::ExpandingArray<2>>(&v);
}
template <typename V>
bool ZeroPadded(const V& v) {
  using std::holds_alternative;
  return holds_alternative<torch::enumtype::kZeros>(v);
}

// Each member's mean cross-entropy over the batch: logits [M, B, K], y [B]
// -> [M]. Summed, their gradient is each member's own.
at::Tensor MemberLosses(const at::Tensor& logits, const at::Tensor& y) {
  const int64_t m = logits.size(0), b = logits.size(1);
  at::Tensor logp = at::log_softmax(logits, 2);
  at::Tensor picked = logp.gather(2, y.view({1, b, 1}).expand({m, b, 1}));
  return -picked.squeeze(2).mean(1);
}

}  // namespace

absl::StatusOr<StackedMembers::Kind> StackedMembers::KindOf(const Net& model) {
  const std::vector<std::string> list = ParamNames(model);
  const std::set<std::string> names(list.begin(), list.end());
  const std::set<std::string> cnn = {
      "conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
      "fc1.weight",   "fc1.bias",   "fc2.weight",   "fc2.bias"};
  const std::set<std::string> mlp = {"fc1.weight", "fc1.bias", "fc2.weight",
                                     "fc2.bias",   "fc3.weight", "fc3.bias"};
  if (names == cnn) return Kind::kCnn;
  if (names == mlp) return Kind::kMlp;
  const std::vector<std::string> blocks = ResNetBlocks(names);
  if (!blocks.empty() && names == ResNetNames(blocks, names)) {
    return Kind::kResNet;
  }
  return absl::UnimplementedError(absl::StrCat(
      "stacked training knows cnn, mlp, resnet18 and resnet34; this model's "
      "parameters (",
      list.empty() ? std::string("none") : absl::StrCat("'", list[0], "', ..."),
      ") match none of them"));
}

absl::Status StackedMembers::Supports(const Net& model) {
  absl::StatusOr<Kind> kind = KindOf(model);
  if (!kind.ok()) return kind.status();
  StackedMembers probe;
  return probe.ReadSpecs(model);
}

// Reads each layer's settings from the member's modules, refusing those
// the stacked forward does not reproduce.
absl::Status StackedMembers::ReadSpecs(const Net& model) {
  namespace nn = torch::nn;
  for (const auto& item : model.named_modules()) {
    const std::string& name = item.key();
    if (auto* c = dynamic_cast<nn::Conv2dImpl*>(item.value().get())) {
      const auto& o = c->options;
      const torch::ExpandingArray<2>* pad = PaddingArray(o.padding());
      if (o.groups() != 1 || (*o.dilation())[0] != 1 ||
          (*o.dilation())[1] != 1 || (*o.stride())[0] != (*o.stride())[1] ||
          pad == nullptr || (**pad)[0] != (**pad)[1] ||
          !ZeroPadded(o.padding_mode())) {
        return absl::UnimplementedError(absl::StrCat(
            "stacked training: convolution '", name,
            "' has groups, dilation, uneven stride/padding or a padding mode "
            "it does not stack"));
      }
      convs_[name] = {(*o.stride())[0], (**pad)[0]};
    } else if (auto* bn = dynamic_cast<nn::BatchNorm2dImpl*>(item.value().get())) {
      const auto& o = bn->options;
      if (!o.momentum().has_value() || !o.affine() || !o.track_running_stats()) {
        return absl::UnimplementedError(absl::StrCat(
            "stacked training: BatchNorm '", name,
            "' needs a momentum, affine and running statistics to stack"));
      }
      bns_[name] = {o.eps(), *o.momentum()};
    }
  }
  return absl::OkStatus();
}

at::Tensor StackedMembers::Stack(const Slot& slot,
                                 const std::vector<at::Tensor>& parts) const {
  std::vector<at::Tensor> on_device;
  for (const at::Tensor& t : parts) {
    on_device.push_back(t.detach().to(device_));
  }
  at::Tensor out =
      slot.stack_new_dim ? at::stack(on_device, 0) : at::cat(on_device, 0);
  return slot.channels_last ? ChannelsLast(out) : out.contiguous();
}

absl::StatusOr<std::unique_ptr<StackedMembers>> StackedMembers::Create(
    std::vector<std::shared_ptr<Net>> members, c10::Device device) {
  if (members.empty() || !members[0]) {
    return absl::InvalidArgumentError("stacked training needs >= 1 member");
  }
  absl::StatusOr<Kind> kind = KindOf(*members[0]);
  if (!kind.ok()) return kind.status();
  std::unique_ptr<StackedMembers> s(new StackedMembers());
  if (absl::Status st = s->ReadSpecs(*members[0]); !st.ok()) return st;
  s->kind_ = *kind;
  s->m_ = static_cast<int64_t>(members.size());
  s->device_ = device;
  if (s->kind_ == Kind::kResNet) {
    const std::vector<std::string> list = ParamNames(*members[0]);
    s->blocks_ = ResNetBlocks({list.begin(), list.end()});
  }
  // Member 0's tensors give the slots; every other member must match them.
  for (bool params : {true, false}) {
    const auto items = params ? members[0]->named_parameters(true)
                              : members[0]->named_buffers(true);
    for (const auto& item : items) {
      Slot slot;
      slot.name = item.key();
      slot.is_param = params;
      const bool linear = s->kind_ != Kind::kResNet
                              ? slot.name.rfind("fc", 0) == 0
                              : ModuleOf(slot.name) == "linear";
      slot.stack_new_dim = linear || item.value().dim() == 0;
      slot.channels_last = item.value().dim() == 4;
      s->by_name_[slot.name] = s->slots_.size();
      s->slots_.push_back(std::move(slot));
    }
  }
  for (size_t k = 0; k < members.size(); ++k) {
    if (!members[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("stacked training: member ", k, " is null"));
    }
    std::map<std::string, at::Tensor> mine;
    for (const auto& item : members[k]->named_parameters(true))
      mine[item.key()] = item.value();
    for (const auto& item : members[k]->named_buffers(true))
      mine[item.key()] = item.value();
    if (mine.size() != s->slots_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "stacked training: member ", k, " has ", mine.size(),
          " tensors, member 0 has ", s->slots_.size()));
    }
    for (Slot& slot : s->slots_) {
      auto it = mine.find(slot.name);
      if (it == mine.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("stacked training: member ", k, " has no tensor '",
                         slot.name, "' (member 0 has)"));
      }
      const at::Tensor& t = it->second;
      if (k > 0 && (!t.sizes().equals(slot.member[0].sizes()) ||
                    t.scalar_type() != slot.member[0].scalar_type())) {
        return absl::InvalidArgumentError(absl::StrCat(
            "stacked training: member ", k, "'s tensor '", slot.name, "' is ",
            Shape(t), ", member 0's ", Shape(slot.member[0])));
      }
      slot.member.push_back(t);
    }
  }
  for (Slot& slot : s->slots_) {
    slot.stacked = s->Stack(slot, slot.member);
    if (slot.is_param) slot.stacked.requires_grad_(true);
  }
  s->members_ = std::move(members);
  return s;
}

std::vector<at::Tensor> StackedMembers::parameters() const {
  std::vector<at::Tensor> out;
  for (const Slot& slot : slots_) {
    if (slot.is_param) out.push_back(slot.stacked);
  }
  return out;
}

absl::StatusOr<std::vector<at::Tensor>> StackedMembers::StackReferences(
    const std::vector<at::Tensor>& flats) const {
  if (static_cast<int64_t>(flats.size()) != m_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "stacked training: ", flats.size(), " references for ", m_, " members"));
  }
  std::vector<at::Tensor> refs(flats.size());
  std::vector<int64_t> offsets(flats.size(), 0);
  for (size_t k = 0; k < flats.size(); ++k) {
    int64_t need = 0;
    for (const Slot& slot : slots_) {
      if (slot.is_param) need += slot.member[k].numel();
    }
    if (!flats[k].defined() || flats[k].numel() < need) {
      return absl::InvalidArgumentError(absl::StrCat(
          "member ", k, ": prox reference has ",
          flats[k].defined() ? flats[k].numel() : 0,
          " values, the model has ", need, " parameters"));
    }
    refs[k] = flats[k].reshape({-1}).to(device_, at::kFloat);
  }
  std::vector<at::Tensor> out;
  for (const Slot& slot : slots_) {
    if (!slot.is_param) continue;
    std::vector<at::Tensor> parts;
    for (size_t k = 0; k < refs.size(); ++k) {
      const int64_t n = slot.member[k].numel();
      parts.push_back(refs[k].slice(0, offsets[k], offsets[k] + n)
                          .view(slot.member[k].sizes()));
      offsets[k] += n;
    }
    out.push_back(Stack(slot, parts));
  }
  return out;
}

absl::Status StackedMembers::WriteBack() {
  try {
    c10::NoGradGuard no_grad;
    for (Slot& slot : slots_) {
      std::vector<at::Tensor> chunks = slot.stacked.chunk(m_, 0);
      for (int64_t k = 0; k < m_; ++k) {
        slot.member[k].copy_(chunks[k].reshape(slot.member[k].sizes()));
      }
    }
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("stacked write-back: ", e.what_without_backtrace()));
  }
  return absl::OkStatus();
}

const at::Tensor& StackedMembers::T(const std::string& name) const {
  auto it = by_name_.find(name);
  TORCH_CHECK(it != by_name_.end(), "stacked members: no tensor '", name, "'");
  return slots_[it->second].stacked;
}

// `shared`: x is one batch for every member (only the first layer sees
// it): the first convolution is then an ordinary one with M*O outputs.
// Otherwise x is [B, M*C, H, W] (or [M, B, C, H, W] per-member inputs)
// and the convolution is grouped, member m on channels [m*C, (m+1)*C).
at::Tensor StackedMembers::Conv(const at::Tensor& x, const std::string& name,
                                bool shared) {
  const ConvSpec& spec = convs_.at(name);
  at::Tensor in = x;
  if (!shared && x.dim() == 5) {
    TORCH_CHECK(x.size(0) == m_, "stacked members: ", m_,
                " members, per-member input for ", x.size(0));
    in = x.transpose(0, 1).reshape(
        {x.size(1), m_ * x.size(2), x.size(3), x.size(4)});
  }
  const std::string bias = name + ".bias";
  const at::Tensor& w = T(name + ".weight");
  return at::conv2d(ChannelsLast(in), w,
                    by_name_.count(bias) ? T(bias) : at::Tensor(),
                    {spec.stride, spec.stride}, {spec.padding, spec.padding},
                    {1, 1}, shared ? 1 : m_);
}

at::Tensor StackedMembers::BatchNorm(const at::Tensor& x,
                                     const std::string& name) {
  const BnSpec& spec = bns_.at(name);
  const std::string counts = name + ".num_batches_tracked";
  if (training_ && by_name_.count(counts)) {
    c10::NoGradGuard no_grad;
    slots_[by_name_.at(counts)].stacked.add_(1);
  }
  return at::batch_norm(x, T(name + ".weight"), T(name + ".bias"),
                        T(name + ".running_mean"), T(name + ".running_var"),
                        training_, spec.momentum, spec.eps,
                        at::globalContext().userEnabledCuDNN());
}

// Linear layer of every member. x is [M, B, I] (member m's inputs in
// x[m]), or with `shared` one [B, I] for all: then one matrix product
// against the M weight matrices side by side.
at::Tensor StackedMembers::Linear(const at::Tensor& x, const std::string& name,
                                  bool shared) {
  const at::Tensor& w = T(name + ".weight");  // [M, O, I]
  const at::Tensor& b = T(name + ".bias");    // [M, O]
  const int64_t out = w.size(1);
  if (shared) {
    at::Tensor y = at::linear(x, w.reshape({m_ * out, w.size(2)}),
                              b.reshape({m_ * out}));
    return y.view({x.size(0), m_, out}).transpose(0, 1);
  }
  TORCH_CHECK(x.dim() == 3 && x.size(0) == m_, "stacked members: ", m_,
              " members, linear input of shape ", x.sizes());
  return at::baddbmm(b.unsqueeze(1), x, w.transpose(1, 2));
}

at::Tensor StackedMembers::ToMembers(const at::Tensor& x) const {
  return x.reshape({x.size(0), m_, -1}).transpose(0, 1);
}

at::Tensor StackedMembers::ResNetBlock(const at::Tensor& x,
                                       const std::string& prefix) {
  at::Tensor y = at::relu(
      BatchNorm(Conv(x, prefix + ".conv1", false), prefix + ".bn1"));
  y = BatchNorm(Conv(y, prefix + ".conv2", false), prefix + ".bn2");
  at::Tensor sc = x;
  if (convs_.count(prefix + ".shortcut_conv")) {
    sc = BatchNorm(Conv(x, prefix + ".shortcut_conv", false),
                   prefix + ".shortcut_bn");
  }
  return at::relu(y + sc);
}

// The members' forward passes (models.cc, model_resnet.cc), stacked.
at::Tensor StackedMembers::Run(const at::Tensor& x, bool shared) {
  switch (kind_) {
    case Kind::kCnn: {
      at::Tensor h = at::max_pool2d(at::relu(Conv(x, "conv1", shared)), {2, 2});
      h = at::max_pool2d(at::relu(Conv(h, "conv2", false)), {2, 2});
      h = at::relu(Linear(ToMembers(h), "fc1", false));
      return Linear(h, "fc2", false);
    }
    case Kind::kMlp: {
      at::Tensor h = at::relu(Linear(x.flatten(shared ? 1 : 2), "fc1", shared));
      h = at::relu(Linear(h, "fc2", false));
      return Linear(h, "fc3", false);
    }
    case Kind::kResNet: {
      at::Tensor h =
          at::relu(BatchNorm(Conv(x, "conv1", shared), "bn1"));
      for (const std::string& block : blocks_) h = ResNetBlock(h, block);
      h = at::adaptive_avg_pool2d(h, {1, 1});
      return Linear(ToMembers(h), "linear", false);
    }
  }
  TORCH_CHECK(false, "stacked members: unknown kind");
}

at::Tensor StackedMembers::Forward(const at::Tensor& x) { return Run(x, true); }

at::Tensor StackedMembers::ForwardEach(const at::Tensor& xs) {
  TORCH_CHECK(xs.dim() >= 2 && xs.size(0) == m_, "stacked members: ", m_,
              " members, per-member inputs of shape ", xs.sizes());
  return Run(xs, false);
}

namespace {

// mu/2 * sum over members of ||w_m - ref_m||^2, with the stacked
// references (zero without FedProx).
at::Tensor ProxLoss(const std::vector<at::Tensor>& params,
                    const std::vector<at::Tensor>& refs, double mu) {
  at::Tensor sum = (params[0] - refs[0]).pow(2).sum();
  for (size_t i = 1; i < params.size(); ++i) {
    sum = sum + (params[i] - refs[i]).pow(2).sum();
  }
  return sum * (mu / 2);
}

std::vector<double> ToDoubles(const at::Tensor& t) {
  at::Tensor c = t.detach().to(c10::kCPU, at::kDouble).contiguous();
  return std::vector<double>(c.data_ptr<double>(),
                             c.data_ptr<double>() + c.numel());
}

// The training loop of LocalTrain (common/train.cc), one step for all
// members; torch errors propagate to LocalTrainStacked.
absl::StatusOr<std::vector<TrainStats>> StackedLoop(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p, const std::vector<at::Tensor>& prox_references) {
  const auto start = std::chrono::steady_clock::now();
  const c10::Device dev = p.device;
  const int64_t m = static_cast<int64_t>(models.size());
  for (const auto& model : models) {
    model->to(dev);
    model->train(true);
  }
  train_internal::Shard shard = train_internal::GatherShard(data, indices, dev);
  absl::StatusOr<std::unique_ptr<StackedMembers>> stacked =
      StackedMembers::Create(models, dev);
  if (!stacked.ok()) return stacked.status();
  StackedMembers& net = **stacked;
  net.train(true);
  const std::vector<at::Tensor> params = net.parameters();
  std::vector<at::Tensor> refs;
  if (cfg.prox_mu > 0 && !prox_references.empty()) {
    absl::StatusOr<std::vector<at::Tensor>> r =
        net.StackReferences(prox_references);
    if (!r.ok()) return r.status();
    refs = *std::move(r);
  }
  auto opt = train_internal::MakeOptimizer(cfg, p.lr, params);
  std::mt19937_64 rng = train_internal::BatchOrderRng(p);
  std::vector<int64_t>& ids = shard.ids;
  const std::vector<train_internal::BatchRange> batches =
      train_internal::PassBatches(*models[0], shard, cfg.batch_size);
  const bool by_steps = p.steps > 0;

  std::vector<TrainStats> stats(m);
  std::vector<double> loss_sum(m, 0.0);
  int64_t steps = 0, samples = 0;
  for (int64_t pass = 0; by_steps ? steps < p.steps : pass < p.epochs; ++pass) {
    Shuffle(ids, rng);
    at::Tensor order = at::tensor(ids, at::kLong).to(dev);
    at::Tensor pass_sum = at::zeros({m}, shard.x.options().dtype(at::kFloat));
    int64_t pass_n = 0;
    for (const train_internal::BatchRange& r : batches) {
      if (by_steps && steps >= p.steps) break;
      at::Tensor idx = order.slice(0, r.first, r.second);
      at::Tensor x = shard.x.index_select(0, idx);
      at::Tensor y = shard.y.index_select(0, idx);
      train_internal::ScheduleStep(*opt, cfg, p, pass, steps);
      opt->zero_grad();
      at::Tensor losses = MemberLosses(net.Forward(x), y);  // [M]
      at::Tensor total = losses.sum();
      if (!refs.empty()) total = total + ProxLoss(params, refs, cfg.prox_mu);
      total.backward();
      opt->step();
      const int64_t bs = r.second - r.first;
      pass_sum += losses.detach().to(at::kFloat) * static_cast<double>(bs);
      if (steps == 0) {
        const std::vector<double> first = ToDoubles(losses);
        for (int64_t k = 0; k < m; ++k) stats[k].first_loss = first[k];
      }
      ++steps;
      samples += bs;
      pass_n += bs;
    }
    const std::vector<double> s = ToDoubles(pass_sum);
    for (int64_t k = 0; k < m; ++k) {
      loss_sum[k] += s[k];
      stats[k].last_epoch_loss = s[k] / static_cast<double>(pass_n);
      if (!std::isfinite(s[k])) {
        return absl::InternalError(absl::StrCat(
            "member ", k, ": local training diverged: loss ",
            stats[k].last_epoch_loss, " in pass ", pass, " (lr ", p.lr, ")"));
      }
    }
  }
  if (absl::Status st = net.WriteBack(); !st.ok()) return st;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (int64_t k = 0; k < m; ++k) {
    stats[k].steps = steps;
    stats[k].samples = samples;
    if (samples > 0) stats[k].mean_loss = loss_sum[k] / samples;
    stats[k].seconds = seconds / static_cast<double>(m);
  }
  return stats;
}

}  // namespace

absl::StatusOr<std::vector<TrainStats>> LocalTrainStacked(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p, const std::vector<at::Tensor>& prox_references) {
  if (absl::Status st = train_internal::CheckInputs(data, indices, cfg, p);
      !st.ok()) {
    return st;
  }
  if (!prox_references.empty() && prox_references.size() != models.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LocalTrainStacked: ", prox_references.size(),
                     " prox references for ", models.size(), " models"));
  }
  if (models.empty()) return std::vector<TrainStats>{};
  for (size_t k = 0; k < models.size(); ++k) {
    if (!models[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("LocalTrainStacked: member ", k, " is null"));
    }
  }
  if (absl::Status st = StackedMembers::Supports(*models[0]); !st.ok()) {
    return st;
  }
  if (indices.empty()) return std::vector<TrainStats>(models.size());
  if (cfg.prox_mu > 0 && !prox_references.empty()) {
    const bool first = prox_references[0].defined();
    for (const at::Tensor& r : prox_references) {
      if (r.defined() != first) {
        return absl::InvalidArgumentError(
            "LocalTrainStacked: prox references must be all defined or all "
            "undefined");
      }
    }
  }
  std::vector<at::Tensor> refs = prox_references;
  if (!refs.empty() && !refs[0].defined()) refs.clear();
  try {
    return StackedLoop(models, data, indices, cfg, p, refs);
  } catch (const c10::Error& e) {
    return absl::InternalError(
        absl::StrCat("stacked local training: ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("stacked local training: ", e.what()));
  }
}

}  // namespace shefl
