// Client-level evaluation (003 Eq. 5-7) and the held-out split it needs.
//
// Each client keeps a held-out part of its own shard (eval.client_holdout,
// a fraction; 0 = off): the daemon never trains on it, and the ensemble is
// scored on it. Both sides derive the split from the seed, so no sample
// and no index list crosses the wire.
//
// Split (n = the client's shard size, f = the fraction):
//   h = 0 when f == 0 or n < 2; else h = min(n - 1, max(1, round(f * n))),
//   so a client with two or more samples keeps at least one of each.
//   The shard (ascending) is shuffled by MakeRng(seed, kPartition,
//   {kHoldoutTag, client_id}); the first h shuffled entries are held out.
//   Both parts are returned ascending.
//
// Summary over the clients that have a held-out part (acc_i their
// accuracy, K of them):
//   mean  = (1/K) sum_i acc_i                       (Eq. 5)
//   worst = min_i acc_i                             (Eq. 6)
//   p10   = Q_0.1 of {acc_i}                        (Eq. 7)
// Q_q is the linear-interpolation quantile (numpy's default): with the
// values sorted ascending a_0..a_{K-1}, position q*(K-1) = j + t gives
// a_j + t*(a_{j+1} - a_j).
// Pure C++ (no LibTorch), used by the daemon and the coordinator alike.
#ifndef SHEFL_COMMON_FED_CLIENT_METRICS_H_
#define SHEFL_COMMON_FED_CLIENT_METRICS_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// A tag under SeedPurpose::kPartition that no partition scheme uses, so the
// split has its own stream.
inline constexpr uint64_t kHoldoutTag = 0x686f6c646f7574ULL;  // "holdout"

struct ClientSplit {
  std::vector<int64_t> train;     // what the daemon trains on
  std::vector<int64_t> held_out;  // what the client evaluates on
};

// Held-out size for a shard of n samples (rule in the header comment).
int64_t HeldOutCount(int64_t n, double fraction);

// Splits one client's shard. fraction outside [0, 1) -> InvalidArgument.
absl::StatusOr<ClientSplit> SplitClientShard(
    const std::vector<int64_t>& shard, double fraction, uint64_t seed,
    int64_t client_id);

struct ClientLevelSummary {
  int64_t clients = 0;  // K: clients with a held-out part
  double mean = 0;
  double worst = 0;
  double p10 = 0;
};

// Linear-interpolation quantile q in [0, 1] of `values` (non-empty).
double Quantile(std::vector<double> values, double q);

// mean, worst and p10 of per-client accuracies (empty -> all zero).
ClientLevelSummary SummariseClients(const std::vector<double>& accuracy);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_CLIENT_METRICS_H_
