#include "common/learn/fens_aggregators.h"

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/core/rng.h"

namespace shefl {
namespace {

// A tag of the batch-order purpose that local training never uses.
constexpr uint64_t kTagFensAggregator = 0xFE45;

class Mean : public EnsembleAggregator {
 public:
  at::Tensor Combine(const at::Tensor& probs) const override {
    return probs.mean(0);
  }
  int64_t num_params() const override { return 0; }
  std::string name() const override { return "mean"; }
};

// Rows of `x` scaled to sum to 1 (an all-zero row stays zero).
at::Tensor NormaliseRows(const at::Tensor& x) {
  return x / x.sum(1, /*keepdim=*/true).clamp_min(1e-30);
}

class Weighted : public EnsembleAggregator {
 public:
  explicit Weighted(at::Tensor lambda) : lambda_(std::move(lambda)) {}
  at::Tensor Combine(const at::Tensor& probs) const override {
    return NormaliseRows((probs * lambda_.unsqueeze(1)).sum(0));
  }
  int64_t num_params() const override { return lambda_.numel(); }
  std::string name() const override { return "weighted"; }

 private:
  at::Tensor lambda_;  // [M, C], each column sums to 1
};

// Adam over a list of parameters (Kingma & Ba, bias-corrected).
class Adam {
 public:
  explicit Adam(std::vector<at::Tensor*> params) : params_(std::move(params)) {
    for (at::Tensor* p : params_) {
      m_.push_back(at::zeros_like(*p));
      v_.push_back(at::zeros_like(*p));
    }
  }
  void Step(const std::vector<at::Tensor>& grads, double lr) {
    ++t_;
    const double c1 = 1 - std::pow(kBeta1, t_), c2 = 1 - std::pow(kBeta2, t_);
    for (size_t i = 0; i < params_.size(); ++i) {
      m_[i].mul_(kBeta1).add_(grads[i], 1 - kBeta1);
      v_[i].mul_(kBeta2).addcmul_(grads[i], grads[i], 1 - kBeta2);
      const at::Tensor denom = (v_[i] / c2).sqrt_().add_(kEps);
      params_[i]->sub_(m_[i] / denom * (lr / c1));
    }
  }

 private:
  static constexpr double kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;
  std::vector<at::Tensor*> params_;
  std::vector<at::Tensor> m_, v_;
  int64_t t_ = 0;
};

// A trainable aggregator: logits from a batch of member probabilities
// [B, M, C], and the gradients of its parameters from dL/dlogits.
class Trainable : public EnsembleAggregator {
 public:
  at::Tensor Combine(const at::Tensor& probs) const override {
    c10::NoGradGuard no_grad;
    return at::softmax(Logits(probs.permute({1, 0, 2}).contiguous()), 1);
  }
  virtual at::Tensor Logits(const at::Tensor& x) const = 0;  // x [B, M, C]
  // Gradients in the order of params(); Logits(x) was the last forward.
  virtual std::vector<at::Tensor> Backward(const at::Tensor& x,
                                           const at::Tensor& dlogits) const = 0;
  virtual std::vector<at::Tensor*> params() = 0;
};

class Linear : public Trainable {
 public:
  Linear(int64_t m, int64_t c)
      : lambda_(at::ones({m, c}, at::kFloat)), bias_(at::zeros({c}, at::kFloat)) {}
  at::Tensor Logits(const at::Tensor& x) const override {
    return (x * lambda_.unsqueeze(0)).sum(1) + bias_;
  }
  std::vector<at::Tensor> Backward(const at::Tensor& x,
                                   const at::Tensor& dz) const override {
    return {(x * dz.unsqueeze(1)).sum(0), dz.sum(0)};
  }
  std::vector<at::Tensor*> params() override { return {&lambda_, &bias_}; }
  int64_t num_params() const override { return lambda_.numel() + bias_.numel(); }
  std::string name() const override { return "linear"; }

 private:
  at::Tensor lambda_, bias_;
};

// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) from the seeded stream.
at::Tensor UniformInit(std::mt19937_64& rng, int64_t rows, int64_t cols,
                       int64_t fan_in) {
  const double bound = 1.0 / std::sqrt(static_cast<double>(fan_in));
  std::vector<float> v(rows * cols);
  for (float& x : v) x = static_cast<float>((2 * Uniform01(rng) - 1) * bound);
  return at::from_blob(v.data(), {rows, cols}, at::kFloat).clone();
}

class ShallowNet : public Trainable {
 public:
  ShallowNet(int64_t m, int64_t c, int64_t hidden, uint64_t seed) {
    auto rng = MakeRng(seed, SeedPurpose::kModelInit, {kTagFensAggregator});
    w1_ = UniformInit(rng, hidden, m * c, m * c);
    b1_ = UniformInit(rng, 1, hidden, m * c).reshape({hidden});
    w2_ = UniformInit(rng, c, hidden, hidden);
    b2_ = UniformInit(rng, 1, c, hidden).reshape({c});
  }
  at::Tensor Logits(const at::Tensor& x) const override {
    return at::addmm(b2_, Hidden(x), w2_.t());
  }
  std::vector<at::Tensor> Backward(const at::Tensor& x,
                                   const at::Tensor& dz) const override {
    const at::Tensor flat = x.reshape({x.size(0), -1});
    const at::Tensor h = Hidden(x);
    const at::Tensor dh = at::mm(dz, w2_) * (h > 0).to(at::kFloat);
    return {at::mm(dh.t(), flat), dh.sum(0), at::mm(dz.t(), h), dz.sum(0)};
  }
  std::vector<at::Tensor*> params() override { return {&w1_, &b1_, &w2_, &b2_}; }
  int64_t num_params() const override {
    return w1_.numel() + b1_.numel() + w2_.numel() + b2_.numel();
  }
  std::string name() const override { return "nn"; }

 private:
  at::Tensor Hidden(const at::Tensor& x) const {
    return at::relu(at::addmm(b1_, x.reshape({x.size(0), -1}), w1_.t()));
  }
  at::Tensor w1_, b1_, w2_, b2_;
};

// Mean cross-entropy training with Adam, in seeded batches.
void Fit(Trainable& agg, const FensConfig& cfg, uint64_t seed,
         const at::Tensor& x /* [N, M, C] */, const at::Tensor& y) {
  c10::NoGradGuard no_grad;
  Adam adam(agg.params());
  const int64_t n = x.size(0), classes = x.size(2);
  const at::Tensor onehot = at::one_hot(y, classes).to(at::kFloat);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto rng = MakeRng(seed, SeedPurpose::kBatchOrder, {kTagFensAggregator});
  double lr = cfg.lr;
  for (int64_t epoch = 0; epoch < cfg.epochs; ++epoch) {
    Shuffle(order, rng);
    for (int64_t s = 0; s < n; s += cfg.batch_size) {
      const int64_t b = std::min(cfg.batch_size, n - s);
      const at::Tensor idx =
          at::from_blob(order.data() + s, {b}, at::kLong).clone();
      const at::Tensor xb = x.index_select(0, idx);
      const at::Tensor dz =
          (at::softmax(agg.Logits(xb), 1) - onehot.index_select(0, idx)) / b;
      adam.Step(agg.Backward(xb, dz), lr);
    }
    lr *= cfg.lr_decay;
  }
}

}  // namespace

std::unique_ptr<EnsembleAggregator> MeanAggregator() {
  return std::make_unique<Mean>();
}

absl::StatusOr<std::unique_ptr<EnsembleAggregator>> FitAggregator(
    const FensConfig& config, uint64_t seed, const at::Tensor& proxy_probs,
    const at::Tensor& proxy_labels,
    const std::vector<std::vector<int64_t>>& label_counts) {
  if (proxy_probs.dim() != 3)
    return absl::InvalidArgumentError("FENS: member probabilities must be [M, N, C]");
  const int64_t m = proxy_probs.size(0), c = proxy_probs.size(2);
  const std::string& kind = config.aggregator;
  if (kind == "mean") return MeanAggregator();
  if (kind == "weighted") {
    if (static_cast<int64_t>(label_counts.size()) != m)
      return absl::InvalidArgumentError(absl::StrCat(
          "fens.aggregator weighted: ", label_counts.size(),
          " members' label counts for ", m, " members"));
    std::vector<float> lambda(m * c, 0.f);
    for (int64_t k = 0; k < c; ++k) {
      double total = 0;
      for (int64_t i = 0; i < m; ++i) {
        if (static_cast<int64_t>(label_counts[i].size()) != c)
          return absl::InvalidArgumentError(absl::StrCat(
              "fens.aggregator weighted: member ", i, " has ",
              label_counts[i].size(), " class counts, not ", c));
        total += label_counts[i][k];
      }
      if (total <= 0)
        return absl::InvalidArgumentError(absl::StrCat(
            "fens.aggregator weighted: class ", k,
            " has no training sample at any member"));
      for (int64_t i = 0; i < m; ++i)
        lambda[i * c + k] = static_cast<float>(label_counts[i][k] / total);
    }
    return std::unique_ptr<EnsembleAggregator>(std::make_unique<Weighted>(
        at::from_blob(lambda.data(), {m, c}, at::kFloat).clone()));
  }
  if (kind != "linear" && kind != "nn")
    return absl::InvalidArgumentError(
        absl::StrCat("fens.aggregator: unknown '", kind, "'"));
  const int64_t n = proxy_probs.size(1);
  if (n == 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "fens.aggregator ", kind,
        " is trained on the proxy set, which is empty (fens.proxy_fraction)"));
  if (proxy_labels.dim() != 1 || proxy_labels.size(0) != n)
    return absl::InvalidArgumentError("FENS: proxy labels must be [N]");
  std::unique_ptr<Trainable> agg;
  if (kind == "linear")
    agg = std::make_unique<Linear>(m, c);
  else
    agg = std::make_unique<ShallowNet>(m, c, config.hidden_units, seed);
  const at::Tensor x =
      proxy_probs.to(at::kFloat).permute({1, 0, 2}).contiguous();
  Fit(*agg, config, seed, x, proxy_labels.to(at::kLong));
  return std::unique_ptr<EnsembleAggregator>(std::move(agg));
}

}  // namespace shefl
