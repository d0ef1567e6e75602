// The model registry: every network shefl trains, by name. The coordinator
// and the clients build models through MakeModel/MakeInitialisedModel so
// that both sides agree on the architecture, the parameter count d and the
// order of the flat state (common/learn/flat_state.h).
//
// Names: cnn | mlp | resnet18 | resnet34 | text (see MakeModel).
// A Net is a torch module, not thread-safe: one forward or training step at a
// time. The functions are thread-safe (MakeInitialisedModel serialises
// torch's global generator).
#ifndef SHEFL_COMMON_LEARN_MODELS_H_
#define SHEFL_COMMON_LEARN_MODELS_H_

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/dataset.h"

namespace shefl {

// A classifier: maps a batch of inputs to logits [B, num_classes].
class Net : public torch::nn::Module {
 public:
  virtual at::Tensor forward(at::Tensor x) = 0;
};

// What a model needs to know about its input. Images set in_channels,
// height and width; flat inputs set features; text sets vocab (token ids in
// [0, vocab), 0 is padding). num_classes is always required.
struct ModelShape {
  int64_t in_channels = 0;
  int64_t height = 0;
  int64_t width = 0;
  int64_t features = 0;
  int64_t vocab = 0;
  int64_t num_classes = 0;
};

// The shape of a data set's inputs: [N,C,H,W] float -> image, [N,F] float
// -> features, integer [N,L] -> text with the given vocabulary size (the
// data config's text_vocab; Dataset itself does not carry it).
absl::StatusOr<ModelShape> ShapeOf(const Dataset& data, int64_t text_vocab);

// The model names MakeModel accepts.
std::vector<std::string> ModelNames();

// Builds an untrained model on the CPU with torch's default initialisation
// (drawn from torch's global generator; see MakeInitialisedModel).
//   cnn:      conv 5x5 C->32, ReLU, maxpool 2; conv 5x5 32->64, ReLU,
//             maxpool 2; fc ->512, ReLU; fc 512->classes (no padding).
//             For 28x28x1 and 10 classes d = 582,026.
//   mlp:      flatten, 200, ReLU, 200, ReLU, classes. Images or features.
//   resnet18/resnet34: CIFAR stem (3x3 conv stride 1, no max-pool),
//             BatchNorm, BasicBlocks [2,2,2,2] / [3,4,6,3], global average
//             pool, linear. resnet18 on 32x32x3, 10 classes: d = 11,173,962.
//   text:     embedding (vocab x 64, row 0 is padding and stays zero), mean
//             over the non-padding tokens, linear 64->classes.
// An unknown name or a shape the model cannot take -> InvalidArgument.
absl::StatusOr<std::shared_ptr<Net>> MakeModel(const std::string& name,
                                               const ModelShape& shape);

// MakeModel with torch seeded by DeriveSeed(seed, kModelInit, {member}), so
// one (seed, member) gives bit-identical weights in every process. Holds a
// process-wide lock while it seeds and builds, because torch's generator is
// global.
absl::StatusOr<std::shared_ptr<Net>> MakeInitialisedModel(
    const std::string& name, const ModelShape& shape, uint64_t seed,
    int64_t member);

// Number of trainable parameters (not buffers).
int64_t NumParameters(const Net& model);

// The ResNet family with the CIFAR stem (model_resnet.cc); depth 18 or 34.
absl::StatusOr<std::shared_ptr<Net>> MakeCifarResNet(int depth,
                                                     const ModelShape& shape);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_MODELS_H_
