// What each registered client reports of itself once its daemon has
// loaded its data (docs/DESIGN.md, "Trust and faults"): its shard size
// (the aggregation weight p_i), its label histogram (HASA) and its
// declared capacity. The first report of a client stands. A daemon
// reports only for clients it hosts (the session says which). Claims are
// untrusted: robust.shard_multiple bounds the shard sizes that weigh.
// Thread-safe: every method takes the mutex (guarded fields checked by
// clang).
#ifndef SHEFL_SERVER_STATE_CLIENT_REPORTS_H_
#define SHEFL_SERVER_STATE_CLIENT_REPORTS_H_

#include <cstdint>
#include <map>
#include <vector>

#include "absl/status/status.h"
#include "common/core/mutex.h"
#include "server/state/client_registry.h"

namespace shefl {

class ClientReports {
 public:
  // Records the shard size the daemon reports once its data is loaded; the
  // first report of a client stands (later different ones are ignored and
  // returned false). Sizes outside [1, kMaxShardSize] are refused.
  absl::Status ReportShardSize(const DaemonSession& s, int64_t client,
                               uint64_t num_samples);
  // The aggregation weight p_i of `client`: its reported shard size (at
  // most the shard bound), or 1 when none was reported.
  double ShardSize(int64_t client) const;
  // robust.shard_multiple: ShardSize and ShardSizes take a claim above
  // `multiple` x the median claim as that bound, so one daemon claiming
  // 2^32 samples cannot take a member's whole weight or HASA's scores;
  // 0 (the default): as claimed.
  void SetShardMultiple(double multiple);
  // Claims ShardSize / ShardSizes have bounded so far (clients).
  int64_t ShardsBounded() const;
  static constexpr uint64_t kMaxShardSize = uint64_t{1} << 32;

  // What a daemon declares of a client beside its shard size: its label
  // histogram (HASA; the counts must add up to the shard size, at most
  // kMaxClasses classes) and its capacity level (models a round, <= 1024;
  // 0: none). First report stands, as for the shard size; `label_bytes`
  // is what the histogram cost on the wire (common/net/label_counts.h).
  absl::Status ReportClientInfo(const DaemonSession& s, int64_t client,
                                const std::vector<uint64_t>& label_counts,
                                uint32_t capacity, uint64_t label_bytes);
  static constexpr size_t kMaxClasses = 1 << 20;
  // Reported label histograms by client (those reported so far).
  std::map<int64_t, std::vector<uint64_t>> LabelCounts() const;
  // Reported shard sizes by client (bounded as ShardSize is).
  std::map<int64_t, uint64_t> ShardSizes() const;
  // The declared capacity of `client`, 0 when none.
  uint32_t DeclaredCapacity(int64_t client) const;
  // Label-count bytes received, by client (every report, repeats included).
  std::map<int64_t, uint64_t> LabelBytes() const;

 private:
  mutable Mutex mu_;
  std::map<int64_t, uint64_t> shard_size_ ABSL_GUARDED_BY(mu_);
  double shard_multiple_ ABSL_GUARDED_BY(mu_) = 0;
  // shard_multiple_ x the median claim; recomputed when a claim arrives.
  mutable double shard_bound_ ABSL_GUARDED_BY(mu_) = 0;
  mutable bool shard_bound_stale_ ABSL_GUARDED_BY(mu_) = false;
  std::map<int64_t, std::vector<uint64_t>> label_counts_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, uint32_t> capacity_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, uint64_t> label_bytes_ ABSL_GUARDED_BY(mu_);

  // A claim as ShardSize returns it (0 multiple: unchanged).
  uint64_t BoundedLocked(uint64_t claim) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_CLIENT_REPORTS_H_
