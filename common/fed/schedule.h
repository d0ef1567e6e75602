// Who trains what in a round (docs/DESIGN.md, "Cohort sampling and
// assignment", "Compression budget"): client tiers, the
// cluster-based cohort sampler of Algorithm 1, the permutation matrix P that
// gives each LPC cluster its model, and the top-k budget of every
// (client, model) pair. Pure functions of (config, seed, round): the
// coordinator and any test compute the same schedule.
// Scheduler is thread-compatible: the round loop alone calls it.
#ifndef SHEFL_COMMON_FED_SCHEDULE_H_
#define SHEFL_COMMON_FED_SCHEDULE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"

namespace shefl {

enum class Tier { kHpc, kLpc };

const char* TierName(Tier t);  // "hpc" | "lpc"

// A client's tier, under every method: ids [0, num_hpc) are HPCs, the rest
// LPCs. Whether the tier also decides sampling, assignment and aggregation
// is the method's (MethodHasTiers); it always decides the local epochs
// (train.hpc_local_epochs) and the tier the bytes are booked under.
Tier ClientTier(const ClientsConfig& clients, int64_t client_id);

// Clusters drawn once from the seed: the HPCs shuffled and cut into C_h
// near-equal clusters, the LPCs likewise into C_l. Without tiers (a method
// that does not sample by tier) all N clients form C = C_h + C_l clusters,
// tagged kLpc. Cluster c's members are members[c], ascending.
struct Clusters {
  std::vector<std::vector<int64_t>> members;
  std::vector<Tier> tier;  // per cluster
};

Clusters MakeClusters(const ClientsConfig& clients, bool tiered,
                      uint64_t seed);

// One sampled client and the cluster it was drawn from (-1 when sampled
// without clusters or as an over-selection extra).
struct CohortMember {
  int64_t client_id;
  int64_t cluster;
  Tier tier;
  bool extra = false;  // an over-selection extra
};

// The cohort of round t (from 0), ordered by cluster, then extras.
// clustered: one client uniformly from each cluster. uniform: C_h HPCs and
// C_l LPCs uniformly without replacement. Over-selection adds
// ceil(C*(1+e)) - C extra clients of either tier, uniformly from those
// not yet drawn; extras train like LPCs and take model (t + i) mod M.
// Without clusters the i-th LPC drawn takes row i of P.
// Only clients `available` accepts are drawn (a cluster with none is
// skipped, a tier with too few gives what it has); with everyone
// available the draw is exactly the one without the filter.
using Availability = std::function<bool(int64_t client_id)>;
std::vector<CohortMember> SampleCohort(const ClientsConfig& clients,
                                       const Clusters& clusters, bool tiered,
                                       uint64_t seed, int64_t round,
                                       const Availability& available = nullptr);

// P: one row per LPC cluster, M columns; in round t the client from LPC
// cluster c trains model rows[c][t mod M]. Drawn afresh every M rounds.
struct PermutationMatrix {
  std::vector<std::vector<int64_t>> rows;
};

enum class PermutationForm { kShuffle, kLatin };

// `auto` for shefl picks latin when C_l mod M == 0, else shuffle; for every
// other method (Fed-ensemble's Algorithm 1: independent row shuffles) it
// picks shuffle. `latin` and `shuffle` are taken as given.
absl::StatusOr<PermutationForm> ResolvePermutationForm(
    const std::string& assignment, const std::string& method,
    int64_t num_lpc_clusters, int64_t M);

// shuffle: every row an independent shuffle of [0, M). latin: every row a
// cyclic shift of one random permutation; the shifts (offset + c) mod M
// are dealt to rows at random, so when rows mod M == 0 each column holds
// each model exactly rows/M times.
PermutationMatrix MakePermutation(PermutationForm form, int64_t rows,
                                  int64_t M, uint64_t seed, int64_t period);

// One client's work in a round.
struct ClientTask {
  int64_t client_id;
  // The tier it trains as: its local epochs and, for shefl, its
  // aggregation group. shefl: the tier it was sampled as (an
  // over-selection extra trains as an LPC); the baselines: ClientTier.
  Tier tier;
  std::vector<int64_t> models;  // ascending
  std::vector<int64_t> k;       // top-k budget per entry of `models`
};

// The whole plan of round t: cohort, assignment and budgets.
struct RoundPlan {
  int64_t round = 0;
  std::vector<ClientTask> tasks;  // ascending client id
  int64_t num_hpc = 0;            // tasks with tier kHpc (C_h for shefl)
  int64_t num_lpc = 0;
  // With over-selection: how many clients' updates close the round (C, the
  // cohort without its extras); 0: every client's.
  int64_t needed = 0;
  // Some HPC trains fewer than M models (capacity levels): the `paper`
  // rule's planned counts do not hold, so it counts what was received.
  bool hpc_subsets = false;
};

// A client's capacity this run: how many of the M models it trains a
// round (common/fed/capacity.h); fractional for HASA. <= 0: not known (the
// config's level, or for hasa the budget B * M).
using CapacityOf = std::function<double(int64_t client_id)>;

// k = ceil(rho * d), in [0, d]. A product within 1e-9 (relative) of an
// integer counts as that integer, so rho = 0.1, d = 10 gives 1, not the 2
// that 0.1's binary representation would. The scheduler uses at least 1.
int64_t KForDensity(int64_t d, double rho);

// An HPC's per-model k: ceil((r / M) * rho * d), in [0, d]. r <= 0 means
// r = M (every model at density rho), as in CompressionConfig; M < 1 is
// treated as 1.
int64_t KForHpc(int64_t d, double rho, double r, int64_t M);

// k_l and k_h from compression.budget_bytes (see CompressionConfig):
// LargestKForBudget of B for an LPC (and every baseline client), of
// floor(r * B / M) for each of a shefl HPC's M models. InvalidArgument
// naming compression.budget_bytes when a budget cannot carry k = 1 (or
// the value type is unknown).
struct BudgetKs {
  int64_t k_lpc = 0;
  int64_t k_hpc = 0;
};
absl::StatusOr<BudgetKs> KsForBudget(const ExperimentConfig& config,
                                     int64_t d);

// Plans every round of an experiment. Cheap to copy; holds the clusters.
class Scheduler {
 public:
  // k from compression.budget_bytes when it is > 0 (KsForBudget), else
  // from the density; the errors of KsForBudget and of an unknown
  // schedule.assignment.
  static absl::StatusOr<Scheduler> Create(const ExperimentConfig& config,
                                          int64_t model_dim);
  // shefl: an HPC trains RotatingModels(capacity) of the M models, its
  // capacity from `capacity` (a daemon's declaration) when that is > 0,
  // else clients.hpc_capacity (M by default). hasa: every sampled client
  // trains RotatingModels(capacity) (HASA's r_i * M), B * M when unknown.
  // The rotation offset is the client's cluster (its id when unclustered).
  RoundPlan Plan(int64_t round, const Availability& available = nullptr,
                 const CapacityOf& capacity = nullptr) const;
  // The configured capacity of a client (M for an HPC without levels).
  int64_t ConfiguredCapacity(int64_t client_id) const;
  const Clusters& clusters() const { return clusters_; }
  PermutationForm form() const { return form_; }
  int64_t k_lpc() const { return k_lpc_; }
  int64_t k_hpc() const { return k_hpc_; }
  // P in force for round t.
  PermutationMatrix PermutationFor(int64_t round) const;

 private:
  ExperimentConfig config_;
  int64_t d_ = 0;
  bool tiered_ = true;
  Clusters clusters_;
  PermutationForm form_ = PermutationForm::kLatin;
  int64_t k_lpc_ = 0, k_hpc_ = 0;
  std::vector<int64_t> hpc_levels_;  // clients.hpc_capacity, parsed
};

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_SCHEDULE_H_
