// The secure source of a round's updates (aggregation.secure;
// docs/DESIGN.md, "Secure aggregation"): one session per model, planned
// by SecurePlanner and opened with the round's tasks; the round drives
// their stages (server/state/secure_session.h; the handlers in
// server/rpc/coordinator_secure.cc serve them) until each has its sum or
// is abandoned, and hands each unmasked sum to the round as the model's
// one update, weighted already. A party whose daemon is gone for good
// (clients.lost_after_s) is not waited for at any stage. After the models
// are published it folds each global update into the public support's
// accumulator.
// A sum beyond the honest range (common/secure/honest_range.h) is not
// handed in: the session is `corrupt`, and the blame book
// (server/state/party_blame.h) benches the daemon its sessions single out:
// its clients sit out later rounds.
// Not thread-safe: the round loop's.
#ifndef SHEFL_SERVER_SOURCE_SECURE_SUMS_H_
#define SHEFL_SERVER_SOURCE_SECURE_SUMS_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/run/model_store.h"
#include "server/source/secure_planner.h"
#include "server/source/update_source.h"
#include "server/state/party_blame.h"

namespace shefl {

class SecureSums : public UpdateSource {
 public:
  SecureSums(CoordinatorState* state, const LostDaemons* lost,
             std::unique_ptr<SecurePlanner> planner)
      : state_(state),
        lost_(lost),
        planner_(std::move(planner)),
        blame_(state->config.secure.blame_window,
               state->config.secure.bench_rounds) {}

  // A session's sum is one update, weighted by the parties already.
  AggregationConfig Aggregation(
      const AggregationConfig& configured) const override;
  void Open(const RoundPlan& plan, int64_t round,
            Clock::time_point deadline) override;
  // Drives the stages until every session is done (true when every
  // planned update came in through a finished session), then hands the
  // sums in.
  bool Gather(RoundState& rs) override;
  void BeforePublish(std::vector<ModelAggregator>& aggregators) override;
  void Published() override;
  // `secure` (each model's outcome) and `secure_bytes`.
  void AddFields(int64_t round, nlohmann::json* line) const override;
  // `secure_benched`: the daemons blamed for corrupt sums.
  void AddSummary(nlohmann::json* summary) const override;
  bool Excludes(int64_t client, int64_t round) const override;
  int64_t ExcludedCount(int64_t round) const override;
  // The support's accumulators, the blame book and the benched clients
  // (server/source/secure_sums_state.cc).
  std::string SaveState(int64_t round) const override;
  absl::Status LoadState(const std::string& bytes, int64_t round) override;

 private:
  // True when every session is done; false on a stop.
  bool WaitForSessions();
  // Each model's sum into `rs`; the round line's `secure` record.
  nlohmann::json HandIn(RoundState& rs);
  nlohmann::json HandInModel(RoundState& rs, int64_t model);
  // A sum's clients in the series plain uploads count in.
  void CountUpdates(size_t clients, const std::string& result);
  // The session's parties into the blame book, by daemon name.
  void RecordParties(int64_t round, const SecureSession::Outcome& o);
  // After the round's sessions: the daemons it benches; their names.
  nlohmann::json Blame(int64_t round);
  // secure.support: oracle: the top select_k of the model's sum and its
  // residual (server/source/secure_oracle.cc); the share of the energy
  // kept goes into `entry`. False (the why in `entry`) on a non-finite sum.
  bool SelectOracle(int64_t model, uint64_t k, SparseDelta* update,
                    nlohmann::json* entry);

  CoordinatorState* const state_;
  const LostDaemons* const lost_;
  std::unique_ptr<SecurePlanner> planner_;
  nlohmann::json line_;                // this round's `secure` record
  std::vector<ModelSnapshot> before_;  // the models before publication
  PartyBlame blame_;
  nlohmann::json benched_line_;  // this round's benched daemons
  // Each benched daemon's clients, and the daemon.
  std::map<int64_t, std::string> benched_clients_;
  // secure.support: oracle: what each model's sums left unsent (d floats;
  // empty before the first).
  std::vector<std::vector<float>> oracle_residuals_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_SECURE_SUMS_H_
