// ResNet-18/34 with the CIFAR stem (He et al. 2016; the layout of the
// widely used kuangliu/pytorch-cifar): 3x3 conv stride 1 and no max-pool,
// so 32x32 inputs keep their resolution into the first stage.
#include <ATen/Functions.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/learn/layout.h"
#include "common/learn/model_builders.h"
#include "common/learn/torch_call.h"

namespace shefl {
namespace {

namespace nn = torch::nn;

nn::Conv2d Conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(
      nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// Two 3x3 convolutions with a residual; a 1x1 projection where the shape
// changes.
class BasicBlock : public nn::Module {
 public:
  BasicBlock(int64_t in, int64_t out, int64_t stride)
      : conv1_(register_module("conv1", Conv(in, out, 3, stride))),
        bn1_(register_module("bn1", nn::BatchNorm2d(out))),
        conv2_(register_module("conv2", Conv(out, out, 3, 1))),
        bn2_(register_module("bn2", nn::BatchNorm2d(out))) {
    if (stride != 1 || in != out) {
      sc_conv_ = register_module("shortcut_conv", Conv(in, out, 1, stride));
      sc_bn_ = register_module("shortcut_bn", nn::BatchNorm2d(out));
    }
  }

  // StackedBlock below is the same for M stacked members.
  at::Tensor forward(const at::Tensor& x) {
    at::Tensor y = at::relu(bn1_->forward(conv1_->forward(x)));
    y = bn2_->forward(conv2_->forward(y));
    at::Tensor sc = sc_conv_ ? sc_bn_->forward(sc_conv_->forward(x)) : x;
    return at::relu(y + sc);
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  nn::Conv2d conv2_;
  nn::BatchNorm2d bn2_;
  nn::Conv2d sc_conv_{nullptr};
  nn::BatchNorm2d sc_bn_{nullptr};
};

class CifarResNet : public Net {
 public:
  CifarResNet(const std::vector<int>& blocks, const ModelShape& s)
      : conv1_(register_module("conv1", Conv(s.in_channels, 64, 3, 1))),
        bn1_(register_module("bn1", nn::BatchNorm2d(64))) {
    int64_t in = 64;
    const int64_t widths[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      nn::ModuleList list;
      for (int b = 0; b < blocks[stage]; ++b) {
        const int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        auto block = std::make_shared<BasicBlock>(in, widths[stage], stride);
        list->push_back(block);
        blocks_.push_back(block);
        in = widths[stage];
      }
      register_module(absl::StrCat("layer", stage + 1), list);
    }
    fc_ = register_module("linear", nn::Linear(512, s.num_classes));
    UseChannelsLast(*this);  // common/learn/layout.h: why
  }

  // ResNetStackedForward below is the same for M stacked members.
  at::Tensor forward(at::Tensor x) override {
    x = at::relu(bn1_->forward(conv1_->forward(ChannelsLast(x))));
    for (auto& block : blocks_) x = block->forward(x);
    x = at::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc_->forward(x);
  }

 private:
  nn::Conv2d conv1_;
  nn::BatchNorm2d bn1_;
  std::vector<std::shared_ptr<BasicBlock>> blocks_;
  nn::Linear fc_{nullptr};
};

at::Tensor StackedBlock(StackedOps& ops, const at::Tensor& x,
                        const std::string& prefix) {
  at::Tensor y = at::relu(ops.BatchNorm(ops.Conv(x, prefix + ".conv1", false),
                                        prefix + ".bn1"));
  y = ops.BatchNorm(ops.Conv(y, prefix + ".conv2", false), prefix + ".bn2");
  at::Tensor sc = x;
  if (ops.HasConv(prefix + ".shortcut_conv")) {
    sc = ops.BatchNorm(ops.Conv(x, prefix + ".shortcut_conv", false),
                       prefix + ".shortcut_bn");
  }
  return at::relu(y + sc);
}

}  // namespace

at::Tensor ResNetStackedForward(StackedOps& ops, const at::Tensor& x,
                                bool shared) {
  at::Tensor h = at::relu(ops.BatchNorm(ops.Conv(x, "conv1", shared), "bn1"));
  for (const std::string& block : ops.Blocks()) h = StackedBlock(ops, h, block);
  h = at::adaptive_avg_pool2d(h, {1, 1});
  return ops.Linear(ops.ToMembers(h), "linear", false);
}

absl::StatusOr<std::shared_ptr<Net>> MakeCifarResNet(int depth,
                                                     const ModelShape& s) {
  std::vector<int> blocks;
  if (depth == 18) {
    blocks = {2, 2, 2, 2};
  } else if (depth == 34) {
    blocks = {3, 4, 6, 3};
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("resnet depth ", depth, " is not 18 or 34"));
  }
  if (s.in_channels < 1 || s.height < 8 || s.width < 8) {
    return absl::InvalidArgumentError(
        absl::StrCat("model 'resnet", depth, "' needs images of at least 8x8"));
  }
  if (s.num_classes < 1) {
    return absl::InvalidArgumentError("resnet: num_classes must be >= 1");
  }
  return TorchCall("building resnet", [&] {
    return std::shared_ptr<Net>(std::make_shared<CifarResNet>(blocks, s));
  });
}

}  // namespace shefl
