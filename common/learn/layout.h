// The memory layout convolutional models train and evaluate in:
// channels-last (NHWC in memory). oneDNN's convolutions then skip
// reordering weights and activations at every call and pooling takes its
// vectorised path: one CPU thread trained the paper CNN's step 1.2-1.5x
// faster, a ResNet-18's 1.06x (docs/PERFORMANCE.md, bench/train_parallel_bench).
// Only strides change: sizes and values stay, and the flat state is read in
// logical order (common/learn/flat_state.cc), so the layout never reaches the
// wire, the books or a checkpoint.
#ifndef SHEFL_COMMON_LEARN_LAYOUT_H_
#define SHEFL_COMMON_LEARN_LAYOUT_H_

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace shefl {

// A 4-D `t` with channels-last strides; anything else as it is. Forced
// through a fresh tensor where needed, because a tensor with one channel
// already counts as channels-last contiguous while its strides still read
// as NCHW, and the strides are what a convolution picks its layout by.
at::Tensor ChannelsLast(const at::Tensor& t);

// Every 4-D parameter of `module` (the convolution weights) to
// channels-last, in place.
void UseChannelsLast(torch::nn::Module& module);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_LAYOUT_H_
