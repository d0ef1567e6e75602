// A model's state as one flat fp32 vector: what the coordinator stores,
// what deltas and top-k indices refer to, what goes on the wire.
//
// The order is fixed and the same in every process that builds the model
// with MakeModel (common/learn/models.h):
//   1. every tensor of named_parameters() (recursive), in registration
//      order, each flattened row-major;
//   2. then every floating-point tensor of named_buffers() (BatchNorm
//      running_mean and running_var), in named_buffers() order.
// Integer buffers (BatchNorm num_batches_tracked) are not part of the
// state: they are bookkeeping, never averaged, never sent.
// Because parameters come first, entries [0, NumParameters(model)) are the
// trainable weights (common/learn/train.cc relies on this for FedProx).
// Thread-compatible: FlatEntry is a plain value.
#ifndef SHEFL_COMMON_LEARN_FLAT_STATE_H_
#define SHEFL_COMMON_LEARN_FLAT_STATE_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/learn/models.h"

namespace shefl {

// One tensor's place in the flat vector.
struct FlatEntry {
  std::string name;  // e.g. "conv1.weight", "bn1.running_mean"
  int64_t offset = 0;
  int64_t numel = 0;
  bool is_buffer = false;
  std::vector<int64_t> shape;  // the tensor's sizes (numel is their product)
};

// The layout, in order; the entries tile [0, FlatSize(model)).
std::vector<FlatEntry> FlatLayout(const Net& model);

// Number of floats in the flat state (parameters + floating buffers).
int64_t FlatSize(const Net& model);

// The state as a new fp32 1-D tensor on the model's device.
at::Tensor Flatten(const Net& model);

// Writes `flat` (any floating dtype, any device, 1-D) into the model's
// parameters and floating buffers, converting to each tensor's dtype and
// device. Does not record autograd history. A size mismatch is
// InvalidArgument naming both sizes; the model is then unchanged.
absl::Status Unflatten(const at::Tensor& flat, Net& model);

// Host-side conveniences for code that keeps models as std::vector<float>.
std::vector<float> FlattenToVector(const Net& model);
absl::Status Unflatten(const std::vector<float>& flat, Net& model);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_FLAT_STATE_H_
