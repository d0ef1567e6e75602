// The `mlp`: 200-200 ReLU layers, its plain and stacked forward.
#include <ATen/Functions.h>
#include <torch/nn/modules/linear.h>

#include "absl/strings/str_cat.h"
#include "common/learn/model_builders.h"

namespace shefl {
namespace {

namespace nn = torch::nn;

class Mlp : public Net {
 public:
  Mlp(int64_t in, int64_t classes)
      : fc1_(register_module("fc1", nn::Linear(in, 200))),
        fc2_(register_module("fc2", nn::Linear(200, 200))),
        fc3_(register_module("fc3", nn::Linear(200, classes))) {}

  at::Tensor forward(at::Tensor x) override {
    x = at::relu(fc1_->forward(x.flatten(1)));
    x = at::relu(fc2_->forward(x));
    return fc3_->forward(x);
  }

 private:
  nn::Linear fc1_;
  nn::Linear fc2_;
  nn::Linear fc3_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<Net>> MakeMlp(const ModelShape& s) {
  const int64_t in =
      IsImage(s) ? s.in_channels * s.height * s.width : s.features;
  if (in < 1) {
    return absl::InvalidArgumentError(
        "model 'mlp' needs an image shape or features > 0");
  }
  return std::shared_ptr<Net>(std::make_shared<Mlp>(in, s.num_classes));
}


// The forward above for M stacked members (on stacked_ops.h's layers).
at::Tensor MlpStackedForward(StackedOps& ops, const at::Tensor& x, bool shared) {
  at::Tensor h = at::relu(ops.Linear(x.flatten(shared ? 1 : 2), "fc1", shared));
  h = at::relu(ops.Linear(h, "fc2", false));
  return ops.Linear(h, "fc3", false);
}

}  // namespace shefl
