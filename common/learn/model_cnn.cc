// The `cnn`: 2 conv + 2 FC (McMahan et al.), its plain and stacked forward.
#include <ATen/Functions.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "absl/strings/str_cat.h"
#include "common/learn/layout.h"
#include "common/learn/model_builders.h"

namespace shefl {
namespace {

namespace nn = torch::nn;

// conv 5x5 -> pool 2 -> conv 5x5 -> pool 2, as in McMahan et al.'s CNN.
class Cnn : public Net {
 public:
  Cnn(const ModelShape& s, int64_t flat)
      : conv1_(register_module(
            "conv1", nn::Conv2d(nn::Conv2dOptions(s.in_channels, 32, 5)))),
        conv2_(
            register_module("conv2", nn::Conv2d(nn::Conv2dOptions(32, 64, 5)))),
        fc1_(register_module("fc1", nn::Linear(flat, 512))),
        fc2_(register_module("fc2", nn::Linear(512, s.num_classes))) {
    UseChannelsLast(*this);  // common/learn/layout.h: why
  }

  at::Tensor forward(at::Tensor x) override {
    x = at::max_pool2d(at::relu(conv1_->forward(ChannelsLast(x))), {2, 2});
    x = at::max_pool2d(at::relu(conv2_->forward(x)), {2, 2});
    x = at::relu(fc1_->forward(x.flatten(1)));
    return fc2_->forward(x);
  }

 private:
  nn::Conv2d conv1_;
  nn::Conv2d conv2_;
  nn::Linear fc1_;
  nn::Linear fc2_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<Net>> MakeCnn(const ModelShape& s) {
  if (!IsImage(s)) {
    return absl::InvalidArgumentError("model 'cnn' needs an image shape");
  }
  const int64_t h = ((s.height - 4) / 2 - 4) / 2;
  const int64_t w = ((s.width - 4) / 2 - 4) / 2;
  if (s.height < 12 || s.width < 12 || h < 1 || w < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model 'cnn' needs images of at least 12x12, got ",
                     s.height, "x", s.width));
  }
  return std::shared_ptr<Net>(std::make_shared<Cnn>(s, 64 * h * w));
}


// The forward above for M stacked members (on stacked_ops.h's layers).
at::Tensor CnnStackedForward(StackedOps& ops, const at::Tensor& x, bool shared) {
  at::Tensor h = at::max_pool2d(at::relu(ops.Conv(x, "conv1", shared)), {2, 2});
  h = at::max_pool2d(at::relu(ops.Conv(h, "conv2", false)), {2, 2});
  h = at::relu(ops.Linear(ops.ToMembers(h), "fc1", false));
  return ops.Linear(h, "fc2", false);
}

}  // namespace shefl
