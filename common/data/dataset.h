// An in-memory labelled data set: what every reader (common/data/data.h)
// returns and what local training and evaluation consume.
// Thread-compatible: Dataset is a plain value (concurrent reads are safe).
#ifndef SHEFL_COMMON_DATA_DATASET_H_
#define SHEFL_COMMON_DATA_DATASET_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace shefl {

struct Dataset {
  std::string name;
  // Images: float32 [N, C, H, W], already normalised. Text: int64 token
  // ids [N, L] (0 is padding). Synthetic: float32 [N, F].
  at::Tensor x;
  at::Tensor y;  // int64 [N], labels in [0, num_classes)
  int64_t num_classes = 0;

  int64_t size() const { return y.defined() ? y.size(0) : 0; }
};

}  // namespace shefl

#endif  // SHEFL_COMMON_DATA_DATASET_H_
