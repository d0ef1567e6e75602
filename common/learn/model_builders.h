// Each architecture's builder and stacked forward, one file each
// (model_cnn.cc, model_mlp.cc, model_text.cc, model_resnet.cc), for the
// model registry in models.cc. Internal to common/learn.
#ifndef SHEFL_COMMON_LEARN_MODEL_BUILDERS_H_
#define SHEFL_COMMON_LEARN_MODEL_BUILDERS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/learn/models.h"
#include "common/learn/stacked_ops.h"

namespace shefl {

absl::StatusOr<std::shared_ptr<Net>> MakeCnn(const ModelShape& s);
at::Tensor CnnStackedForward(StackedOps& ops, const at::Tensor& x, bool shared);

absl::StatusOr<std::shared_ptr<Net>> MakeMlp(const ModelShape& s);
at::Tensor MlpStackedForward(StackedOps& ops, const at::Tensor& x, bool shared);

absl::StatusOr<std::shared_ptr<Net>> MakeText(const ModelShape& s);

// MakeCifarResNet (models.h) with depth 18 or 34.
at::Tensor ResNetStackedForward(StackedOps& ops, const at::Tensor& x,
                                bool shared);

// True for an image shape (channels, height and width all set).
inline bool IsImage(const ModelShape& s) {
  return s.in_channels > 0 && s.height > 0 && s.width > 0;
}

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_MODEL_BUILDERS_H_
