#include "common/models.h"

#include <ATen/Context.h>
#include <ATen/Functions.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/layout.h"
#include "common/rng.h"

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
    UseChannelsLast(*this);  // common/layout.h: why
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

// Bag of embeddings: the mean of the non-padding tokens' vectors, then a
// linear classifier. Row 0 (padding) is zero and gets no gradient.
class TextNet : public Net {
 public:
  static constexpr int64_t kDim = 64;
  TextNet(int64_t vocab, int64_t classes)
      : emb_(register_module(
            "embedding",
            nn::Embedding(nn::EmbeddingOptions(vocab, kDim).padding_idx(0)))),
        fc_(register_module("fc", nn::Linear(kDim, classes))) {}

  at::Tensor forward(at::Tensor x) override {
    at::Tensor mask = x.ne(0).to(at::kFloat);  // [B, L]
    at::Tensor sum = emb_->forward(x).sum(1);  // [B, D]
    at::Tensor count = mask.sum(1, /*keepdim=*/true).clamp_min(1.0);
    return fc_->forward(sum / count);
  }

 private:
  nn::Embedding emb_;
  nn::Linear fc_;
};

absl::Status NeedClasses(const std::string& name, const ModelShape& s) {
  if (s.num_classes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model '", name, "': num_classes must be >= 1"));
  }
  return absl::OkStatus();
}

bool IsImage(const ModelShape& s) {
  return s.in_channels > 0 && s.height > 0 && s.width > 0;
}

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

absl::StatusOr<std::shared_ptr<Net>> MakeMlp(const ModelShape& s) {
  const int64_t in =
      IsImage(s) ? s.in_channels * s.height * s.width : s.features;
  if (in < 1) {
    return absl::InvalidArgumentError(
        "model 'mlp' needs an image shape or features > 0");
  }
  return std::shared_ptr<Net>(std::make_shared<Mlp>(in, s.num_classes));
}

absl::StatusOr<std::shared_ptr<Net>> MakeText(const ModelShape& s) {
  if (s.vocab < 2) {
    return absl::InvalidArgumentError("model 'text' needs vocab >= 2");
  }
  return std::shared_ptr<Net>(
      std::make_shared<TextNet>(s.vocab, s.num_classes));
}

absl::StatusOr<std::shared_ptr<Net>> Build(const std::string& name,
                                           const ModelShape& s) {
  if (name == "cnn") return MakeCnn(s);
  if (name == "mlp") return MakeMlp(s);
  if (name == "resnet18") return MakeCifarResNet(18, s);
  if (name == "resnet34") return MakeCifarResNet(34, s);
  if (name == "text") return MakeText(s);
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

std::vector<std::string> ModelNames() {
  return {"cnn", "mlp", "resnet18", "resnet34", "text"};
}

absl::StatusOr<std::shared_ptr<Net>> MakeModel(const std::string& name,
                                               const ModelShape& shape) {
  if (absl::Status st = NeedClasses(name, shape); !st.ok()) return st;
  try {
    return Build(name, shape);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("building model '", name,
                                            "': ", e.what_without_backtrace()));
  }
}

absl::StatusOr<std::shared_ptr<Net>> MakeInitialisedModel(
    const std::string& name, const ModelShape& shape, uint64_t seed,
    int64_t member) {
  static std::mutex* mu = new std::mutex;
  std::lock_guard<std::mutex> lock(*mu);
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
