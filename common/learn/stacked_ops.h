// The layer operations of a stacked forward: each architecture writes its
// stacked forward against this interface right beside its plain forward
// (model_cnn.cc, model_mlp.cc, model_resnet.cc), so the two cannot drift
// apart; the model registry (models.cc) holds both. learn owns the
// interface and never implements it: StackedMembers, in the stacked room
// (common/learn_stacked/stacked_members.h), does, and finds each model's
// forward through StackedForwardOf. Layers are named as the members'
// modules are. Not thread-safe: one forward at a time.
#ifndef SHEFL_COMMON_LEARN_STACKED_OPS_H_
#define SHEFL_COMMON_LEARN_STACKED_OPS_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

namespace shefl {

class StackedOps {
 public:
  virtual ~StackedOps() = default;
  // Convolution `name` of every member. `shared`: x is one batch for all
  // members (only the first layer sees it); else x is [B, M*C, H, W], or
  // [M, B, C, H, W] per-member inputs.
  virtual at::Tensor Conv(const at::Tensor& x, const std::string& name,
                          bool shared) = 0;
  virtual at::Tensor BatchNorm(const at::Tensor& x, const std::string& name) = 0;
  // Linear layer `name` of every member: x is [M, B, I], or with `shared`
  // one [B, I] for all; the result is [M, B, O].
  virtual at::Tensor Linear(const at::Tensor& x, const std::string& name,
                            bool shared) = 0;
  // [B, M*C, ...] -> [M, B, C*...]: from stacked channels to per-member
  // rows, before the first linear layer.
  virtual at::Tensor ToMembers(const at::Tensor& x) const = 0;
  // True when the members have a convolution named `name`.
  virtual bool HasConv(const std::string& name) const = 0;
  // ResNet: the blocks "layer<s>.<b>" in order.
  virtual const std::vector<std::string>& Blocks() const = 0;
};

// A registered model's stacked forward: logits [M, B, classes].
using StackedForwardFn = at::Tensor (*)(StackedOps& ops, const at::Tensor& x,
                                        bool shared);

// The registered stacked forward of model `name` (models.cc's table); null
// when it has none (the model trains member by member).
StackedForwardFn StackedForwardOf(const std::string& name);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_OPS_H_
