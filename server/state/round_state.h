// One round as the coordinator sees it while it is open: which
// (client, model) pairs were assigned with which budget and model version,
// what has arrived, and the per-model aggregators the accepted updates are
// buffered in. Thread-safe: gRPC handlers call it concurrently.
#ifndef SHEFL_SERVER_STATE_ROUND_STATE_H_
#define SHEFL_SERVER_STATE_ROUND_STATE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/core/mutex.h"
#include "common/fed/aggregate.h"
#include "common/fed/schedule.h"
#include "server/state/refusal.h"

namespace shefl {

class RoundState {
 public:
  using Clock = std::chrono::steady_clock;

  // `round` counts from 1. `versions[m]` is model m's version this round.
  RoundState(int64_t round, const RoundPlan& plan,
             std::vector<uint64_t> versions, uint64_t dim,
             const AggregationConfig& agg, int64_t num_models,
             Clock::time_point deadline);

  int64_t round() const { return round_; }
  Clock::time_point deadline() const { return deadline_; }

  // OK when `client` was assigned `model` this round at `version`.
  absl::Status CheckAssigned(int64_t client, int64_t model,
                             uint64_t version) const;
  // ALREADY_EXISTS when the pair's update was already accepted: a second
  // upload is refused at its header, before its blob is read.
  absl::Status CheckNotReceived(int64_t client, int64_t model) const;
  // The top-k budget of an assigned pair.
  absl::StatusOr<int64_t> Budget(int64_t client, int64_t model) const;

  // Buffers a decoded update. FAILED_PRECONDITION once the round closed
  // (the caller counts it late), ALREADY_EXISTS for a second upload of the
  // pair, INVALID_ARGUMENT for a bad delta; nothing is kept on error.
  absl::Status Accept(int64_t client, int64_t model, double num_samples,
                      SparseDelta delta);

  // aggregation.secure: the unmasked sum of model `model`'s session, as one
  // update (its rule is then uniform: the sum is already weighted), which
  // holds the values of `clients`: their pairs count as received and
  // replied to. FAILED_PRECONDITION once the round closed.
  absl::Status AcceptSecure(int64_t model, SparseDelta sum,
                            const std::vector<int64_t>& clients);
  // Whether the round is complete now (WaitComplete without the wait).
  bool Complete() const;

  // The handler of an accepted update has booked its reply. A pair counts
  // toward completion only then, so the round's line in rounds.jsonl holds
  // every byte of its uploads, the replies included.
  void Replied(int64_t client, int64_t model);

  // Waits until every assigned pair arrived and was replied to (with
  // over-selection: every pair of the first `plan.needed` clients), or the
  // deadline passed, or `stop` is set (checked every 100 ms). Returns true
  // when complete.
  bool WaitComplete(const std::atomic<bool>& stop);
  // The same, returning false also at `until` (before the deadline), so
  // the round loop can look at who is gone between waits.
  bool WaitComplete(const std::atomic<bool>& stop, Clock::time_point until);
  // Stops waiting for `client`'s updates that have not arrived (its daemon
  // is gone for good: server/state/lost_daemons.h): the round completes
  // without them. An update that arrives before the close still counts.
  // Returns the pairs given up.
  int64_t Abandon(int64_t client);
  // Sampled clients with an update neither replied to nor given up, and
  // those given up (ascending).
  std::vector<int64_t> waiting_clients() const;
  std::vector<int64_t> abandoned_clients() const;
  // Refuses every later Accept; returns the aggregators, one per model.
  // Waits (at most 2 s) for the replies of updates already accepted.
  std::vector<ModelAggregator>& Close();
  bool closed() const;

  // A refused RPC of `bytes` bytes, counted by reason; an update (upload)
  // also counts as rejected or late.
  void CountRefusal(const std::string& reason, uint64_t bytes, bool update);
  std::map<std::string, int64_t> refusals() const;
  uint64_t refused_bytes() const;
  int64_t accepted() const;
  int64_t rejected() const;
  int64_t late() const;
  // Sampled clients (ascending) and the ones of them whose every update
  // arrived.
  std::vector<int64_t> participants() const;
  std::vector<int64_t> completed_clients() const;
  // Sampled clients none of whose updates arrived, and those with at
  // least one (the stallers' strikes: server/state/staller_book.h).
  std::vector<int64_t> silent_clients() const;
  std::vector<int64_t> heard_clients() const;
  // Models assigned to `client` this round whose update has not arrived.
  std::set<int64_t> pending_models(int64_t client) const;
  int64_t expected() const;
  // Seconds from the round's opening to the last accepted update of each
  // client that sent one (rounds.jsonl `daemon_done_seconds` groups them
  // by daemon: a slow daemon shows, and whether it held others up).
  std::map<int64_t, double> arrival_seconds() const;

 private:
  struct Pair {
    int64_t k;
    Tier tier;
    bool received = false;
    bool replied = false;
    bool abandoned = false;  // Abandon: not waited for
    double arrived_s = 0;  // since opened_, once received
  };
  bool CompleteLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::map<int64_t, bool> HeardByClient() const;  // any update arrived
  const int64_t round_;
  const std::vector<uint64_t> versions_;
  const Clock::time_point deadline_;
  const Clock::time_point opened_ = Clock::now();
  const int64_t needed_;  // clients that close the round; 0: all
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  // (client, model)
  std::map<std::pair<int64_t, int64_t>, Pair> pairs_ ABSL_GUARDED_BY(mu_);
  std::vector<ModelAggregator> aggregators_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  int64_t received_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t replied_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rejected_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t late_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, int64_t> refusals_ ABSL_GUARDED_BY(mu_);
  uint64_t refused_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_ROUND_STATE_H_
