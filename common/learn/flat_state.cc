#include "common/learn/flat_state.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/learn/torch_call.h"

namespace shefl {
namespace {

struct NamedTensor {
  std::string name;
  at::Tensor tensor;
  bool is_buffer;
};

// The state tensors in flat order (see the header).
std::vector<NamedTensor> StateTensors(const Net& model) {
  std::vector<NamedTensor> out;
  for (const auto& item : model.named_parameters(/*recurse=*/true)) {
    out.push_back({item.key(), item.value(), false});
  }
  for (const auto& item : model.named_buffers(/*recurse=*/true)) {
    if (at::isFloatingType(item.value().scalar_type())) {
      out.push_back({item.key(), item.value(), true});
    }
  }
  return out;
}

}  // namespace

std::vector<FlatEntry> FlatLayout(const Net& model) {
  std::vector<FlatEntry> layout;
  int64_t offset = 0;
  for (const NamedTensor& t : StateTensors(model)) {
    layout.push_back({t.name, offset, t.tensor.numel(), t.is_buffer,
                      t.tensor.sizes().vec()});
    offset += t.tensor.numel();
  }
  return layout;
}

int64_t FlatSize(const Net& model) {
  int64_t n = 0;
  for (const NamedTensor& t : StateTensors(model)) n += t.tensor.numel();
  return n;
}

at::Tensor Flatten(const Net& model) {
  c10::NoGradGuard no_grad;
  std::vector<at::Tensor> parts;
  for (const NamedTensor& t : StateTensors(model)) {
    parts.push_back(t.tensor.detach().reshape({-1}).to(at::kFloat));
  }
  if (parts.empty()) return at::empty({0}, at::kFloat);
  return at::cat(parts, 0);
}

absl::Status Unflatten(const at::Tensor& flat, Net& model) {
  const int64_t want = FlatSize(model);
  if (!flat.defined() || flat.dim() != 1 || flat.numel() != want) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flat state has ", flat.defined() ? flat.numel() : 0, " values (rank ",
        flat.defined() ? flat.dim() : 0, "), the model needs ", want));
  }
  if (!at::isFloatingType(flat.scalar_type())) {
    return absl::InvalidArgumentError("flat state must be floating point");
  }
  return TorchCall("unflatten", [&] {
    c10::NoGradGuard no_grad;
    std::vector<NamedTensor> state = StateTensors(model);
    at::Tensor src = flat;
    if (!state.empty()) src = flat.to(state.front().tensor.device());
    int64_t offset = 0;
    for (NamedTensor& t : state) {
      const int64_t n = t.tensor.numel();
      t.tensor.copy_(src.slice(0, offset, offset + n).view(t.tensor.sizes()));
      offset += n;
    }
  });
}

std::vector<float> FlattenToVector(const Net& model) {
  at::Tensor flat = Flatten(model).to(at::kCPU).contiguous();
  const float* p = flat.data_ptr<float>();
  return std::vector<float>(p, p + flat.numel());
}

absl::Status Unflatten(const std::vector<float>& flat, Net& model) {
  // from_blob does not copy and does not write: the cast is safe.
  at::Tensor t = at::from_blob(const_cast<float*>(flat.data()),
                               {static_cast<int64_t>(flat.size())},
                               at::TensorOptions().dtype(at::kFloat));
  return Unflatten(t, model);
}

}  // namespace shefl
