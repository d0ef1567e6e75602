// The synthetic set: a Gaussian mixture with one component per class.
// Class means are drawn from the seed with norm about kMeanNorm (so that
// any two means are about kMeanNorm*sqrt(2) apart, against unit noise: a
// Bayes accuracy around 95% for 4 classes -- learnable by an MLP in a few
// steps, not trivially separable). All draws are written out from raw
// 64-bit words so the set is the same on every platform.
#include <ATen/ops/empty.h>

#include <cmath>
#include <exception>
#include <random>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"

namespace shefl {
namespace {

constexpr double kMeanNorm = 3.0;
// Stream tags under SeedPurpose::kSynthetic.
constexpr uint64_t kTagMeans = 1, kTagTrain = 2, kTagTest = 3;

absl::Status CheckSyntheticConfig(const DataConfig& c) {
  auto bad = [](const char* key, int64_t v, int64_t min) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.", key, " must be >= ", min, ", got ", v));
  };
  if (c.synthetic_train < 1) return bad("synthetic_train", c.synthetic_train, 1);
  if (c.synthetic_test < 1) return bad("synthetic_test", c.synthetic_test, 1);
  if (c.synthetic_features < 1) {
    return bad("synthetic_features", c.synthetic_features, 1);
  }
  if (c.synthetic_classes < 2) {
    return bad("synthetic_classes", c.synthetic_classes, 2);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Dataset> MakeSynthetic(const DataConfig& config, bool train,
                                      uint64_t seed) {
  SHEFL_RETURN_IF_ERROR(CheckSyntheticConfig(config));
  const int64_t k = config.synthetic_classes;
  const int64_t f = config.synthetic_features;
  const int64_t n = train ? config.synthetic_train : config.synthetic_test;
  std::vector<double> means(k * f);
  auto mean_rng = MakeRng(seed, SeedPurpose::kSynthetic, {kTagMeans});
  const double scale = kMeanNorm / std::sqrt(static_cast<double>(f));
  for (auto& m : means) m = scale * StandardNormal(mean_rng);
  // Balanced labels (i mod K) in a seeded order, then the samples.
  auto rng = MakeRng(seed, SeedPurpose::kSynthetic,
                     {train ? kTagTrain : kTagTest});
  std::vector<int64_t> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = i % k;
  Shuffle(labels, rng);
  try {
    Dataset out;
    out.name = "synthetic";
    out.num_classes = k;
    out.x = at::empty({n, f}, at::TensorOptions().dtype(at::kFloat));
    out.y = at::empty({n}, at::TensorOptions().dtype(at::kLong));
    float* x = out.x.data_ptr<float>();
    int64_t* y = out.y.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      y[i] = labels[i];
      for (int64_t j = 0; j < f; ++j) {
        x[i * f + j] =
            static_cast<float>(means[labels[i] * f + j] + StandardNormal(rng));
      }
    }
    return out;
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("synthetic: ", e.what()));
  }
}

}  // namespace shefl
