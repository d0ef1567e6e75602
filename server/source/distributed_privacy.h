// Distributed differential privacy (privacy.mode distributed,
// docs/PRIVACY.md): a source that wraps the secure sums
// (server/source/secure_sums.h). The parties clip each client's round to S
// and add Skellam noise to their inputs before masking (the planner sets
// both in each session's setup: common/secure/party_noise.h), so the
// coordinator only ever unmasks noised sums; this source keeps the
// budget: each round is charged to every sampled tier's accountant
// (server/source/privacy_ledger.h), epsilon goes in each round's line,
// summary.json and /metrics, and StopBefore ends the run before a round
// that would pass privacy.target_epsilon. Its checkpoint holds the
// accountants and the secure sums' own state.
// Not thread-safe: the round loop's.
#ifndef SHEFL_SERVER_SOURCE_DISTRIBUTED_PRIVACY_H_
#define SHEFL_SERVER_SOURCE_DISTRIBUTED_PRIVACY_H_

#include <memory>
#include <string>
#include <vector>

#include "server/source/privacy_ledger.h"
#include "server/source/wrapping_source.h"

namespace shefl {

class DistributedPrivacy final : public WrappingSource {
 public:
  DistributedPrivacy(CoordinatorState* state, std::unique_ptr<UpdateSource> inner);

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
  CoordinatorState* const state_;
  PrivacyLedger ledger_;
  nlohmann::json line_;  // this round's `privacy` record
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_DISTRIBUTED_PRIVACY_H_
