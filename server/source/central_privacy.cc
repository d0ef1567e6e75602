#include "server/source/central_privacy.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/fed/private_sum.h"
#include "common/privacy/gaussian_sampler.h"
#include "common/secure/aes_ctr.h"
#include "common/secure/sha256.h"

namespace shefl {

namespace {

// The noise key: fresh from the operating system, or derived from
// privacy.noise_seed for a run that must repeat.
absl::StatusOr<Key32> NoiseKey(uint64_t seed) {
  Key32 key{};
  if (seed == 0) {
    if (RAND_bytes(key.data(), static_cast<int>(key.size())) != 1)
      return absl::InternalError("privacy: RAND_bytes failed for the noise key");
    return key;
  }
  Bytes text = {'s', 'h', 'e', 'f', 'l', ' ', 'd', 'p', ' ', 'n', 'o', 'i',
                's', 'e', ' ', 'v', '1'};
  for (int i = 0; i < 8; ++i) text.push_back(static_cast<uint8_t>(seed >> (8 * i)));
  return Sha256(text);
}

// (round, index) in the counter block's high 8 bytes: each stream counts up
// in the low 8 from zero, so no two streams overlap.
Bytes StreamIv(int64_t round, int64_t index) {
  Bytes iv(kAesCtrIvBytes, 0);
  for (int i = 0; i < 4; ++i) {
    iv[3 - i] = static_cast<uint8_t>(static_cast<uint64_t>(round) >> (8 * i));
    iv[7 - i] = static_cast<uint8_t>(static_cast<uint64_t>(index) >> (8 * i));
  }
  return iv;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CentralPrivacy>> CentralPrivacy::Create(
    CoordinatorState* state, std::unique_ptr<UpdateSource> inner) {
  SHEFL_ASSIGN_OR_RETURN(Key32 key, NoiseKey(state->config.privacy.noise_seed));
  return std::unique_ptr<CentralPrivacy>(
      new CentralPrivacy(state, std::move(inner), key));
}

CentralPrivacy::CentralPrivacy(CoordinatorState* state,
                               std::unique_ptr<UpdateSource> inner, Key32 key)
    : WrappingSource(std::move(inner)),
      state_(state),
      key_(key),
      z_update_(UpdateNoiseMultiplier(state->config)),
      ledger_(state->config),
      clip_(state->config.privacy.clip) {
  state_->metrics.SetPrivacy(0, clip_);
}

AggregationConfig CentralPrivacy::Aggregation(
    const AggregationConfig& configured) const {
  // Each model's one update is the noised sum, weighted already.
  AggregationConfig agg = inner().Aggregation(configured);
  agg.rule = "uniform";
  agg.weight_by_samples = false;
  return agg;
}

void CentralPrivacy::Open(const RoundPlan& plan, int64_t round,
                          Clock::time_point deadline) {
  inner().Open(plan, round, deadline);
  round_ = round;
  cohort_ = static_cast<int64_t>(plan.tasks.size());
  planned_.assign(static_cast<size_t>(state_->config.model.num_models), {0, 0});
  for (const ClientTask& t : plan.tasks)
    for (int64_t m : t.models) ++planned_[m][t.tier == Tier::kHpc ? 0 : 1];
}

std::vector<double> CentralPrivacy::Normals(int64_t round, int64_t index,
                                            size_t n) const {
  auto bytes = AesCtrKeystream(key_, StreamIv(round, index), NormalBytesFor(n));
  std::vector<double> out(n);
  // The key is 32 bytes and the IV 16: the stream cannot fail but for
  // memory, which the round could not survive anyway.
  if (!bytes.ok()) {
    LogLine("privacy", std::string(bytes.status().message()));
    std::abort();  // never publish a sum without its noise
  }
  StandardNormalsFromBytes(bytes->data(), n, out.data());
  return out;
}

double CentralPrivacy::NoiseModel(int64_t m,
                                  const std::map<int64_t, JointClip>& clips,
                                  ModelAggregator* agg) {
  const auto [h, l] = planned_[m];
  const auto coef = PlannedCoefficients(state_->config.aggregation, h, l);
  const uint64_t dim = state_->store->dim();
  std::vector<double> sum = ClippedSum(agg->updates(), coef, clips, dim);
  const double sigma = z_update_ * clip_ * MaxCoefficient(coef, h, l);
  const std::vector<double> noise = Normals(round_, m, dim);
  ReceivedUpdate one;
  one.delta.dim = dim;
  one.delta.indices.resize(dim);
  one.delta.values.resize(dim);
  for (uint64_t j = 0; j < dim; ++j) {
    one.delta.indices[j] = static_cast<uint32_t>(j);
    one.delta.values[j] = static_cast<float>(sum[j] + sigma * noise[j]);
  }
  agg->mutable_updates()->assign(1, std::move(one));
  return sigma;
}

// Andrew et al. 2021: the share of clients under S, counted as
// sum(b_i - 1/2) (sensitivity 1/2) plus N(0, sigma_b^2), over the cohort.
void CentralPrivacy::AdaptClip(const std::map<int64_t, JointClip>& clips) {
  const PrivacyConfig& p = state_->config.privacy;
  double centred = 0;
  for (const auto& [client, c] : clips) centred += (c.norm <= clip_ ? 0.5 : -0.5);
  const double noise = ClipCountNoise(state_->config) *
                       Normals(round_, state_->config.model.num_models, 1)[0];
  const double share =
      (centred + noise) / static_cast<double>(std::max<int64_t>(cohort_, 1)) + 0.5;
  clip_ *= std::exp(-p.clip_lr * (share - p.clip_quantile));
  line_["clip_share"] = share;
  line_["next_clip"] = clip_;
}

void CentralPrivacy::BeforePublish(std::vector<ModelAggregator>& aggregators) {
  inner().BeforePublish(aggregators);
  const std::map<int64_t, JointClip> clips = ClipJointly(aggregators, clip_);
  line_ = nlohmann::json::object();
  line_["clip"] = clip_;
  std::vector<double> stds;
  for (size_t m = 0; m < aggregators.size(); ++m)
    stds.push_back(planned_[m][0] + planned_[m][1] > 0
                       ? NoiseModel(static_cast<int64_t>(m), clips, &aggregators[m])
                       : 0.0);
  line_["noise_std"] = stds;
  ledger_.Compose();
  if (state_->config.privacy.adaptive_clip) AdaptClip(clips);
  const PrivacySpent spent = ledger_.Spent();
  line_["epsilon"] = spent.epsilon;
  line_["delta"] = ledger_.delta();
  line_["order"] = spent.order;
  state_->metrics.SetPrivacy(spent.epsilon, clip_);
}

void CentralPrivacy::AddFields(int64_t round, nlohmann::json* line) const {
  inner().AddFields(round, line);
  (*line)["epsilon"] = line_.value("epsilon", 0.0);
  (*line)["privacy"] = line_;
}

void CentralPrivacy::AddSummary(nlohmann::json* summary) const {
  inner().AddSummary(summary);
  nlohmann::json privacy = ledger_.Summary();
  privacy["update_noise_multiplier"] = z_update_;
  privacy["clip"] = clip_;
  (*summary)["epsilon"] = privacy["epsilon"];
  (*summary)["privacy"] = std::move(privacy);
}

}  // namespace shefl
