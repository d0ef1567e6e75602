// torch::optim::SGD's step with the same arithmetic, op for op, and so the
// same weights bit for bit (a Python client's torch.optim.SGD included),
// for less memory traffic on a CPU: weight decay is added into the
// gradient in place, where torch adds it into a new tensor (an allocation
// and a write of the model's size every step; the gradient is dropped
// after the step anyway, see DropGrads). Learning rate, momentum and weight
// decay are read from the param groups' SGDOptions as torch's step reads
// them, so schedules that set the lr work unchanged. Dampening and Nesterov
// are not used by the project and are refused at construction.
//
// DropGrads is the other half: the gradients set undefined before the
// forward pass instead of zeroed, so the next backward stores each
// gradient (autograd then keeps the tensor it computed) rather than adding
// it to zeros. The values are the same; a memset and an addition of the
// model's size per step are saved.
// Thread-compatible, like torch's optimisers.
#ifndef SHEFL_COMMON_LEARN_LEAN_SGD_H_
#define SHEFL_COMMON_LEARN_LEAN_SGD_H_

#include <ATen/core/Tensor.h>
#include <torch/optim/sgd.h>

#include <vector>

namespace shefl {

class LeanSgd : public torch::optim::SGD {
 public:
  LeanSgd(std::vector<at::Tensor> params, torch::optim::SGDOptions options);
  at::Tensor step(LossClosure closure = nullptr) override;

 private:
  // Momentum buffers by parameter, in param-group order; undefined until a
  // parameter's first step with a gradient (then a clone of it, as torch).
  std::vector<at::Tensor> momentum_;
};

// Every parameter's gradient of `opt` set undefined.
void DropGrads(torch::optim::Optimizer& opt);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_LEAN_SGD_H_
