#include "common/learn/models.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>

#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/core/mutex.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"
#include "common/learn/model_builders.h"
#include "common/learn/torch_call.h"

namespace shefl {
namespace {

absl::Status NeedClasses(const std::string& name, const ModelShape& s) {
  if (s.num_classes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", name, "': num_classes must be >= 1"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Net>> MakeResNet18(const ModelShape& s) {
  return MakeCifarResNet(18, s);
}
absl::StatusOr<std::shared_ptr<Net>> MakeResNet34(const ModelShape& s) {
  return MakeCifarResNet(34, s);
}

// The model registry: one line per model, in the order of
// common/core/model_catalog.h (the config loader's list, which
// models_test holds equal to this one).
// Each entry: the builder and the stacked forward (null: the model trains
// member by member; stacked_ops.h).
struct ModelEntry {
  const char* name;
  absl::StatusOr<std::shared_ptr<Net>> (*build)(const ModelShape&);
  StackedForwardFn stacked;
};
constexpr ModelEntry kModels[] = {
    {"cnn", MakeCnn, CnnStackedForward},
    {"mlp", MakeMlp, MlpStackedForward},
    {"resnet18", MakeResNet18, ResNetStackedForward},
    {"resnet34", MakeResNet34, ResNetStackedForward},
    {"text", MakeText, nullptr},
};

absl::StatusOr<std::shared_ptr<Net>> Build(const std::string& name,
                                           const ModelShape& s) {
  for (const ModelEntry& e : kModels)
    if (name == e.name) return e.build(s);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown model '", name,
                   "' (known: ", absl::StrJoin(ModelNames(), ", "), ")"));
}

}  // namespace

absl::StatusOr<ModelShape> ShapeOf(const Dataset& data, int64_t text_vocab) {
  ModelShape s;
  s.num_classes = data.num_classes;
  const at::Tensor& x = data.x;
  if (!x.defined()) {
    return absl::InvalidArgumentError(
        absl::StrCat("data set '", data.name, "' has no inputs"));
  }
  if (!at::isFloatingType(x.scalar_type())) {
    if (x.dim() != 2) {
      return absl::InvalidArgumentError(
          absl::StrCat("data set '", data.name, "': token ids must be [N, L]"));
    }
    s.vocab = text_vocab;
  } else if (x.dim() == 4) {
    s.in_channels = x.size(1);
    s.height = x.size(2);
    s.width = x.size(3);
  } else if (x.dim() == 2) {
    s.features = x.size(1);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("data set '", data.name, "': inputs of rank ", x.dim(),
                     " are neither images [N,C,H,W] nor features [N,F]"));
  }
  return s;
}

StackedForwardFn StackedForwardOf(const std::string& name) {
  for (const ModelEntry& e : kModels)
    if (name == e.name) return e.stacked;
  return nullptr;
}

std::vector<std::string> ModelNames() {
  std::vector<std::string> names;
  for (const ModelEntry& e : kModels) names.push_back(e.name);
  return names;
}

absl::StatusOr<std::shared_ptr<Net>> MakeModel(const std::string& name,
                                               const ModelShape& shape) {
  SHEFL_RETURN_IF_ERROR(NeedClasses(name, shape));
  return TorchCall(absl::StrCat("building model '", name, "'"),
                   [&] { return Build(name, shape); });
}

absl::StatusOr<std::shared_ptr<Net>> MakeInitialisedModel(
    const std::string& name, const ModelShape& shape, uint64_t seed,
    int64_t member) {
  static Mutex* mu = new Mutex;
  MutexLock lock(*mu);
  at::manual_seed(DeriveSeed(seed, SeedPurpose::kModelInit,
                             {static_cast<uint64_t>(member)}));
  return MakeModel(name, shape);
}

int64_t NumParameters(const Net& model) {
  int64_t n = 0;
  for (const at::Tensor& p : model.parameters()) n += p.numel();
  return n;
}

}  // namespace shefl
