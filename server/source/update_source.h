// How a round's updates reach its aggregators (docs/DESIGN.md, "The
// round"): plain uploads, each validated by the gRPC handlers as it
// arrives, or one secure session per model whose unmasked sum is the
// model's one update. The Coordinator chooses a source once, at set-up
// (MakeUpdateSource), and its round loop names no transport: it opens the
// source with the round, lets it gather, and publishes what it gathered.
//
// A new way for updates to arrive is a new implementation, not a branch
// in the round loop: a buffered source gathers until a model's buffer is
// full; a private one adds its noise in BeforePublish, so nothing leaves
// un-noised.
// Not thread-safe: the round loop's (the handlers reach a source's
// sessions through CoordinatorState, which is thread-safe).
#ifndef SHEFL_SERVER_SOURCE_UPDATE_SOURCE_H_
#define SHEFL_SERVER_SOURCE_UPDATE_SOURCE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/fed/aggregate.h"
#include "common/fed/schedule.h"
#include "server/shared/coordinator_state.h"
#include "server/state/lost_daemons.h"
#include "server/state/round_state.h"

namespace shefl {

class UpdateSource {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~UpdateSource() = default;

  // The rule the round's books aggregate with: the config's, unless the
  // source's updates arrive weighted already.
  virtual AggregationConfig Aggregation(
      const AggregationConfig& configured) const {
    return configured;
  }
  // After the round's tasks are pushed: what the source needs opened.
  virtual void Open(const RoundPlan& plan, int64_t round,
                    Clock::time_point deadline) {}
  // Waits for the round's updates and hands what arrived to `rs`: true
  // when every expected update is in, false at the deadline or a stop.
  virtual bool Gather(RoundState& rs) = 0;
  // Just before the round's kind publishes `aggregators` (a private source
  // adds noise here). Not called for a round abandoned on a stop.
  virtual void BeforePublish(std::vector<ModelAggregator>& aggregators) {}
  // After the round's models were published.
  virtual void Published() {}
  // The source's fields of round `round`'s line in rounds.jsonl.
  virtual void AddFields(int64_t round, nlohmann::json* line) const {}
  // The source's fields of summary.json.
  virtual void AddSummary(nlohmann::json* summary) const {}
  // Whether `client` sits out round `round` on the source's word (a
  // daemon blamed for corrupt secure sums), and how many do.
  virtual bool Excludes(int64_t client, int64_t round) const { return false; }
  virtual int64_t ExcludedCount(int64_t round) const { return 0; }
  // What the source carries from round to round, after round `round`
  // was published (empty: nothing), for the checkpoint; and back from it
  // on a resume. The round loop takes it; the record writes it.
  virtual std::string SaveState(int64_t round) const { return ""; }
  virtual absl::Status LoadState(const std::string& bytes, int64_t round) {
    return absl::OkStatus();
  }
  // On a resume whose checkpoint has no source state: whether the source
  // may start from empty (a privacy accountant may not: it would forget
  // what the run spent).
  virtual absl::Status StateMissing(int64_t round) const {
    return absl::OkStatus();
  }
  // Before round `round` opens: why the run must stop instead (empty: it
  // goes on). The privacy source stops before privacy.target_epsilon.
  virtual std::string StopBefore(int64_t round) const { return ""; }
};

// aggregation.secure's source when it is on, plain uploads otherwise;
// under privacy.mode central, wrapped in the noise (central_privacy.h).
absl::StatusOr<std::unique_ptr<UpdateSource>> MakeUpdateSource(
    CoordinatorState* state, const LostDaemons* lost);

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_UPDATE_SOURCE_H_
