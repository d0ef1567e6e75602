// The `text` model: a bag of embeddings and a linear classifier (AG News).
// No stacked forward: it trains member by member.
#include <ATen/Functions.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "absl/strings/str_cat.h"
#include "common/learn/model_builders.h"

namespace shefl {
namespace {

namespace nn = torch::nn;

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

}  // namespace

absl::StatusOr<std::shared_ptr<Net>> MakeText(const ModelShape& s) {
  if (s.vocab < 2) {
    return absl::InvalidArgumentError("model 'text' needs vocab >= 2");
  }
  return std::shared_ptr<Net>(
      std::make_shared<TextNet>(s.vocab, s.num_classes));
}


}  // namespace shefl
