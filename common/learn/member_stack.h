// An ensemble's members run as one forward: how evaluation
// (common/learn/evaluate.h) takes the stacked path without knowing it.
// learn declares this interface and never implements it; the stacked room
// (common/learn_stacked/stacked_eval.h) does, and a caller that wants it
// hands it in (EvalThreads::stack, common/learn/eval_batches.h). So learn
// holds the plain path alone and stands on no room above it, and a caller
// that names no stacker evaluates one member after another.
// A MemberStack is not thread-safe (one forward at a time); a StackMembers
// function is called on the evaluating thread.
#ifndef SHEFL_COMMON_LEARN_MEMBER_STACK_H_
#define SHEFL_COMMON_LEARN_MEMBER_STACK_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <vector>

namespace shefl {

class Net;  // common/learn/models.h

class MemberStack {
 public:
  virtual ~MemberStack() = default;
  // Logits [M, B, classes]: every member applied to the same batch x.
  virtual at::Tensor Forward(const at::Tensor& x) = 0;
};

// The members stacked on `device` for evaluation (running statistics, no
// gradients), or null where they should run one after another (the model
// does not stack, or the stacker's mode says no). The members keep their
// weights; the stack reads them as they are when it is made.
using StackMembers = std::function<std::unique_ptr<MemberStack>(
    const std::vector<std::shared_ptr<Net>>& models, c10::Device device)>;

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_MEMBER_STACK_H_
