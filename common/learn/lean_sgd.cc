#include "common/learn/lean_sgd.h"

#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>

#include <utility>

namespace shefl {

LeanSgd::LeanSgd(std::vector<at::Tensor> params,
                 torch::optim::SGDOptions options)
    : torch::optim::SGD(std::move(params), options) {
  TORCH_CHECK(options.dampening() == 0 && !options.nesterov(),
              "LeanSgd: dampening and Nesterov are not supported");
}

at::Tensor LeanSgd::step(LossClosure closure) {
  at::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  size_t i = 0;
  for (torch::optim::OptimizerParamGroup& group : param_groups()) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    for (at::Tensor& p : group.params()) {
      if (momentum_.size() <= i) momentum_.resize(i + 1);
      at::Tensor& buf = momentum_[i++];
      if (!p.grad().defined()) continue;
      at::Tensor d_p = p.mutable_grad();
      // torch: d_p = d_p.add(p, weight_decay); the same op, in place.
      if (o.weight_decay() != 0) d_p.add_(p, o.weight_decay());
      if (o.momentum() != 0) {
        if (!buf.defined()) {
          buf = d_p.clone().detach();
        } else {
          buf.mul_(o.momentum()).add_(d_p, 1 - o.dampening());
        }
        d_p = buf;
      }
      p.add_(d_p, -1 * o.lr());
    }
  }
  return loss;
}

void DropGrads(torch::optim::Optimizer& opt) {
  for (torch::optim::OptimizerParamGroup& group : opt.param_groups()) {
    for (at::Tensor& p : group.params()) p.mutable_grad() = at::Tensor();
  }
}

}  // namespace shefl
