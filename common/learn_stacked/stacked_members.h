// A stacked copy of M same-architecture members: an HPC's M models held as
// one set of tensors so that a training step of all of them is one
// computation (docs/DESIGN.md, "Ensemble-native training and the round on a
// GPU"). The members' convolutions become grouped convolutions (groups = M)
// over M*C channels, their linear layers batched matrix products over a
// member dimension, their BatchNorm layers one BatchNorm over M*C channels
// (it is per channel, so it stacks). Each member's output depends on its own
// slice of the stacked tensors only, so the gradient of the sum of the
// members' losses is each member's own gradient, and an element-wise
// optimiser (SGD with momentum and weight decay, Adam) on the stacked tensors
// takes each member's own step: the result equals M separate trainings up to
// float rounding (grouped and batched kernels sum in another order).
//
// Known architectures (common/learn/models.h): cnn, mlp, resnet18/34. They are
// recognised by their parameter names, shapes and module types; each one's
// stacked forward is written beside its plain forward in learn
// (common/learn/model_cnn.cc, model_mlp.cc, model_resnet.cc) against the
// layer operations this class implements (common/learn/stacked_ops.h), and
// the model registry holds both (stacked_members_test checks them against
// each member's own forward). The training loop on the stacked path is
// stacked_train.h's, the evaluation's stack stacked_eval.h's.
// Not thread-safe: one forward or step at a time.
#ifndef SHEFL_COMMON_LEARN_STACKED_STACKED_MEMBERS_H_
#define SHEFL_COMMON_LEARN_STACKED_STACKED_MEMBERS_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/dataset.h"
#include "common/learn/member_stack.h"
#include "common/learn/models.h"
#include "common/learn/stacked_ops.h"

namespace shefl {

class StackedMembers final : public StackedOps, public MemberStack {
 public:
  // OK where `model` is an architecture the stacked forward knows;
  // Unimplemented naming what it is not otherwise (e.g. `text`).
  static absl::Status Supports(const Net& model);

  // Stacks `members` (M >= 1, one architecture and shape: else
  // InvalidArgument naming the member and tensor) onto `device`. The
  // members are left as they are; WriteBack copies the stacked state into
  // them. Unsupported architecture -> Unimplemented.
  static absl::StatusOr<std::unique_ptr<StackedMembers>> Create(
      std::vector<std::shared_ptr<Net>> members, c10::Device device);

  int64_t size() const { return m_; }

  // BatchNorm in training mode (batch statistics, running statistics
  // updated) or evaluation mode (running statistics).
  void train(bool on) { training_ = on; }

  // Logits [M, B, classes]: every member applied to the same batch x (what
  // a member's forward takes: [B, C, H, W] images or [B, F] features).
  // Throws c10::Error on a bad shape, as a Net's forward does. The
  // evaluation's stack (learn's MemberStack; stacked_eval.h).
  at::Tensor Forward(const at::Tensor& x) override;
  // The same with member m applied to xs[m]; xs is [M, B, ...].
  at::Tensor ForwardEach(const at::Tensor& xs);

  // The trainable stacked tensors (leaves with requires_grad), in the
  // members' parameter order: what an optimiser steps.
  std::vector<at::Tensor> parameters() const;

  // One flat state per member (common/learn/flat_state.h order; only its
  // parameter head is read) stacked like parameters(), on the stacked
  // device: FedProx's references. Too short -> InvalidArgument.
  absl::StatusOr<std::vector<at::Tensor>> StackReferences(
      const std::vector<at::Tensor>& flats) const;

  // Copies the stacked parameters and buffers (BatchNorm running
  // statistics and batch counts) into the members' own tensors, each
  // keeping its storage, device and layout.
  absl::Status WriteBack();

  // The cohort's shrinking stack (common/learn_stacked/cohort_train.h): keeps
  // the members at positions `keep` (ascending, of the current stack) and
  // writes every other one back into its own network first. The kept parameters
  // become new leaves (gradients dropped). An empty `keep` writes all back and
  // leaves an empty stack.
  absl::Status Keep(const std::vector<int64_t>& keep);
  // A tensor stacked like the parameters (a momentum buffer, a stacked
  // reference: members in M equal chunks of dim 0) narrowed to `keep`.
  static at::Tensor KeepRows(const at::Tensor& stacked, int64_t m,
                             const std::vector<int64_t>& keep);
  // One value per member, v [M], shaped to broadcast against `stacked`
  // (one of parameters(), or stacked like them): a per-member lr.
  at::Tensor PerMember(const at::Tensor& v, const at::Tensor& stacked) const;

  // The layer operations (stacked_ops.h) the registered stacked forwards
  // are written against.
  at::Tensor Conv(const at::Tensor& x, const std::string& name,
                  bool shared) override;
  at::Tensor BatchNorm(const at::Tensor& x, const std::string& name) override;
  at::Tensor Linear(const at::Tensor& x, const std::string& name,
                    bool shared) override;
  at::Tensor ToMembers(const at::Tensor& x) const override;
  bool HasConv(const std::string& name) const override {
    return convs_.count(name) > 0;
  }
  const std::vector<std::string>& Blocks() const override { return blocks_; }

 private:
  enum class Kind { kCnn, kMlp, kResNet };
  // One tensor of the members (parameter or buffer) and its stacked form:
  // conv weights, biases and BatchNorm vectors concatenated on dim 0
  // (members in M equal chunks), linear weights/biases and scalars stacked
  // on a new dim 0.
  struct Slot {
    std::string name;
    bool is_param = false;
    bool stack_new_dim = false;
    bool channels_last = false;
    std::vector<at::Tensor> member;  // the members' own tensors
    at::Tensor stacked;
  };
  struct ConvSpec {
    int64_t stride = 1, padding = 0;
  };
  struct BnSpec {
    double eps = 1e-5, momentum = 0.1;
  };

  StackedMembers() = default;
  static absl::StatusOr<Kind> KindOf(const Net& model);
  absl::Status ReadSpecs(const Net& model);
  at::Tensor Stack(const Slot& slot, const std::vector<at::Tensor>& parts) const;
  const at::Tensor& T(const std::string& name) const;
  at::Tensor Run(const at::Tensor& x, bool shared);

  Kind kind_ = Kind::kCnn;
  StackedForwardFn forward_ = nullptr;  // the registry's, for kind_
  int64_t m_ = 0;
  bool training_ = true;
  c10::Device device_ = c10::Device(c10::kCPU);
  std::vector<std::shared_ptr<Net>> members_;
  std::vector<Slot> slots_;                // parameters first, then buffers
  std::map<std::string, size_t> by_name_;  // slot index by tensor name
  std::map<std::string, ConvSpec> convs_;  // by module name
  std::map<std::string, BnSpec> bns_;      // by module name
  std::vector<std::string> blocks_;        // ResNet: "layer1.0", ...
};

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_STACKED_MEMBERS_H_
