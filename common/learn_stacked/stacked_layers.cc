// StackedMembers' layer operations (common/learn/stacked_ops.h): grouped
// convolutions over M*C channels, one BatchNorm over them, and batched
// matrix products over the member dimension.
#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <c10/core/GradMode.h>
#include <c10/util/Exception.h>

#include "common/learn/layout.h"
#include "common/learn_stacked/stacked_members.h"

namespace shefl {

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

}  // namespace shefl
