// The privacy budget of a run (docs/PRIVACY.md, "The accountant"): one RDP
// accountant per sampled tier (common/fed/privacy_plan.h's PrivacyTiers),
// each round charged what privacy.mode's mechanism costs at the tier's q
// (common/privacy/round_rdp.h); epsilon is the worst tier's at delta. It
// says whether the next round would pass privacy.target_epsilon, and keeps
// its accountants in a checkpoint bit for bit. Both private sources
// (central_privacy.h, distributed_privacy.h) keep one.
// Not thread-safe: the round loop's.
#ifndef SHEFL_SERVER_SOURCE_PRIVACY_LEDGER_H_
#define SHEFL_SERVER_SOURCE_PRIVACY_LEDGER_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "common/core/config.h"
#include "common/fed/privacy_plan.h"
#include "common/privacy/rdp_accountant.h"

namespace shefl {

class PrivacyLedger {
 public:
  explicit PrivacyLedger(const ExperimentConfig& c);

  // One more round on every tier.
  void Compose();
  // Epsilon so far, and after `more` rounds beyond (the worst tier's).
  PrivacySpent Spent() const { return SpentAfter(0); }
  PrivacySpent SpentAfter(int64_t more) const;
  double delta() const { return delta_; }
  // Empty when round `round` may run under privacy.target_epsilon; else
  // why not (kept for Summary's `stopped`).
  std::string StopBefore(int64_t round) const;

  // summary.json's `privacy` fields common to both modes.
  nlohmann::json Summary() const;
  // Each tier's accountant ({"tier", "accountant"} objects), and back:
  // DataLoss naming what does not fit the config's tiers.
  nlohmann::json Save() const;
  absl::Status Load(const nlohmann::json& tiers, int64_t round);

 private:
  const PrivacyConfig privacy_;
  const double delta_;
  std::vector<SampledTier> tiers_;
  std::vector<std::vector<double>> step_rdp_;  // per tier, one round
  std::vector<RdpAccountant> accountants_;     // per tier
  mutable std::string stop_reason_;
};

// DataLoss for a private run's state file that does not load: what is
// wrong, and that the run does not resume.
absl::Status PrivacyStateLost(int64_t round, const std::string& what);

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_PRIVACY_LEDGER_H_
