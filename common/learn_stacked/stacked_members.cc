#include "common/learn_stacked/stacked_members.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include <chrono>
#include <cmath>
#include <set>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"
#include "common/learn/layout.h"
#include "common/learn/torch_call.h"

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
  SHEFL_RETURN_IF_ERROR(s->ReadSpecs(*members[0]));
  s->kind_ = *kind;
  s->forward_ = StackedForwardOf(*kind == Kind::kCnn   ? "cnn"
                                 : *kind == Kind::kMlp ? "mlp"
                                                       : "resnet18");
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
  return TorchCall("stacked write-back", [&] {
    c10::NoGradGuard no_grad;
    for (Slot& slot : slots_) {
      std::vector<at::Tensor> chunks = slot.stacked.chunk(m_, 0);
      for (int64_t k = 0; k < m_; ++k) {
        slot.member[k].copy_(chunks[k].reshape(slot.member[k].sizes()));
      }
    }
  });
}

at::Tensor StackedMembers::KeepRows(const at::Tensor& stacked, int64_t m,
                                    const std::vector<int64_t>& keep) {
  std::vector<at::Tensor> chunks = stacked.chunk(m, 0);
  std::vector<at::Tensor> kept;
  for (int64_t k : keep) kept.push_back(chunks.at(k));
  at::Tensor out = at::cat(kept, 0);
  // A 4-d stack in channels-last memory stays so (a 1x1 kernel is both).
  const bool cl = stacked.dim() == 4 && !stacked.is_contiguous() &&
                  stacked.is_contiguous(at::MemoryFormat::ChannelsLast);
  return cl ? ChannelsLast(out) : out.contiguous();
}

absl::Status StackedMembers::Keep(const std::vector<int64_t>& keep) {
  SHEFL_RETURN_IF_ERROR(TorchCall("stacked keep", [&] {
    c10::NoGradGuard no_grad;
    std::vector<bool> stays(m_, false);
    for (int64_t k : keep) stays.at(k) = true;
    for (Slot& slot : slots_) {
      std::vector<at::Tensor> chunks = slot.stacked.chunk(m_, 0);
      for (int64_t k = 0; k < m_; ++k) {
        if (!stays[k])
          slot.member[k].copy_(chunks[k].reshape(slot.member[k].sizes()));
      }
      std::vector<at::Tensor> members;
      for (int64_t k : keep) members.push_back(slot.member[k]);
      slot.member = std::move(members);
      if (keep.empty()) {
        slot.stacked = at::Tensor();
        continue;
      }
      slot.stacked = KeepRows(slot.stacked.detach(), m_, keep);
      if (slot.is_param) slot.stacked.requires_grad_(true);
    }
  }));
  std::vector<std::shared_ptr<Net>> members;
  for (int64_t k : keep) members.push_back(members_[k]);
  members_ = std::move(members);
  m_ = static_cast<int64_t>(keep.size());
  return absl::OkStatus();
}

at::Tensor StackedMembers::PerMember(const at::Tensor& v,
                                     const at::Tensor& stacked) const {
  std::vector<int64_t> shape(stacked.dim(), 1);
  shape[0] = stacked.size(0);
  const int64_t rows = stacked.size(0) / m_;  // 1 where stacked on a new dim
  return (rows == 1 ? v : v.repeat_interleave(rows)).view(shape);
}

const at::Tensor& StackedMembers::T(const std::string& name) const {
  auto it = by_name_.find(name);
  TORCH_CHECK(it != by_name_.end(), "stacked members: no tensor '", name, "'");
  return slots_[it->second].stacked;
}

// The registered stacked forward of the members' architecture
// (model_cnn.cc, model_mlp.cc, model_resnet.cc), on this class's layers.
at::Tensor StackedMembers::Run(const at::Tensor& x, bool shared) {
  TORCH_CHECK(forward_ != nullptr, "stacked members: no stacked forward");
  return forward_(*this, x, shared);
}

at::Tensor StackedMembers::Forward(const at::Tensor& x) { return Run(x, true); }

at::Tensor StackedMembers::ForwardEach(const at::Tensor& xs) {
  TORCH_CHECK(xs.dim() >= 2 && xs.size(0) == m_, "stacked members: ", m_,
              " members, per-member inputs of shape ", xs.sizes());
  return Run(xs, false);
}

}  // namespace shefl
