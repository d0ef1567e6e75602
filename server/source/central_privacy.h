// Central differential privacy (privacy.mode: central, docs/PRIVACY.md):
// a source that wraps another (plain uploads) and, before the round's
// models are published, replaces each model's updates by one: the
// clipped, fixed-denominator sum (common/fed/private_sum.h) plus Gaussian
// noise of standard deviation z S c_max per coordinate, dense. Nothing
// the clients sent reaches a model un-noised. The RDP accountant of each
// sampled tier (server/source/privacy_ledger.h) adds the round's cost;
// epsilon so far goes in each round's line, summary.json and /metrics,
// and StopBefore ends the run before a round that would pass
// privacy.target_epsilon. With privacy.adaptive_clip the clip follows the
// noised share of clients under it (Andrew et al. 2021).
// The noise comes from AES-256-CTR under a key drawn from the operating
// system (or derived from privacy.noise_seed), one stream per round and
// model. The accountant and the clip are checkpointed (SaveState).
// Not thread-safe: the round loop's.
#ifndef SHEFL_SERVER_SOURCE_CENTRAL_PRIVACY_H_
#define SHEFL_SERVER_SOURCE_CENTRAL_PRIVACY_H_

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/fed/privacy_plan.h"
#include "common/fed/private_sum.h"
#include "common/secure/bytes.h"
#include "server/source/privacy_ledger.h"
#include "server/source/wrapping_source.h"

namespace shefl {

class CentralPrivacy final : public WrappingSource {
 public:
  static absl::StatusOr<std::unique_ptr<CentralPrivacy>> Create(
      CoordinatorState* state, std::unique_ptr<UpdateSource> inner);

  AggregationConfig Aggregation(const AggregationConfig& configured) const override;
  void Open(const RoundPlan& plan, int64_t round,
            Clock::time_point deadline) override;
  void BeforePublish(std::vector<ModelAggregator>& aggregators) override;
  void AddFields(int64_t round, nlohmann::json* line) const override;
  void AddSummary(nlohmann::json* summary) const override;
  std::string SaveState(int64_t round) const override;
  absl::Status LoadState(const std::string& bytes, int64_t round) override;
  absl::Status StateMissing(int64_t round) const override;
  std::string StopBefore(int64_t round) const override {
    return ledger_.StopBefore(round);
  }

 private:
  CentralPrivacy(CoordinatorState* state, std::unique_ptr<UpdateSource> inner,
                 Key32 key);
  // Standard normals of stream (round, index): index < M a model's, M the
  // clip count's.
  std::vector<double> Normals(int64_t round, int64_t index, size_t n) const;
  // Clips, sums and noises model m's updates into one; its noise std.
  double NoiseModel(int64_t m, const std::map<int64_t, JointClip>& clips,
                    ModelAggregator* agg);
  void AdaptClip(const std::map<int64_t, JointClip>& clips);

  CoordinatorState* const state_;
  const Key32 key_;
  const double z_update_;   // the sum's multiplier (z, or z_Delta)
  PrivacyLedger ledger_;
  double clip_;
  // This round's plan: planned updates per model and tier.
  int64_t round_ = 0;
  int64_t cohort_ = 0;
  std::vector<std::array<int64_t, 2>> planned_;
  // What this round's line reports.
  nlohmann::json line_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_CENTRAL_PRIVACY_H_
