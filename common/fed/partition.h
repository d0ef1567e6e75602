// Splitting a labelled data set among N clients: iid, Dirichlet(alpha) over
// labels, and pathological shards. Every split is a pure function of
// (config, labels, num_classes, num_clients, seed), so each daemon computes
// the same split on its own and takes only its own clients' parts; no
// partition is ever sent over the wire. Pure C++: labels come in as a
// vector, so this module needs no LibTorch.
//
// Exact schemes (n samples, K classes, N clients; all randomness from
// MakeRng(seed, SeedPurpose::kPartition, {scheme tag, ..., n, N})):
//
//  iid        One seeded shuffle of 0..n-1. Client j takes positions
//             [floor(j*n/N), floor((j+1)*n/N)): sizes differ by at most 1.
//
//  dirichlet  For each class k: the indices with label k, ascending, are
//             shuffled by a stream of their own (tags: k). Proportions
//             p_k ~ Dir(alpha, ..., alpha) over the N clients are drawn by a
//             second stream (tags: attempt, k), from Gamma(alpha) variates
//             (Marsaglia-Tsang, written out, computed in log space so tiny
//             alpha cannot underflow). With c_j = p_k[0] + ... + p_k[j-1]
//             and n_k the class size, client j takes shuffled positions
//             [b_j, b_{j+1}) where b_j = round(c_j * n_k), b_0 = 0 and
//             b_N = n_k ("cumulative rounding": the parts always add up).
//             If some client ends up with fewer than min_samples samples,
//             all proportions are redrawn with attempt + 1 (the shuffles
//             stay); after kMaxDirichletAttempts attempts it is an error.
//
//  shards     Indices sorted by (label, index) -- stable, ties by index --
//             are cut into S shards; shard t covers sorted positions
//             [floor(t*n/S), floor((t+1)*n/S)), so the n mod S remainder
//             is spread one sample each over the shards and every sample is
//             in exactly one shard. A seeded permutation of the S shard ids
//             is dealt s at a time: client j gets entries [j*s, (j+1)*s).
//             Requires S >= N*s. When S > N*s, the S - N*s leftover entries
//             are dealt round-robin (entry N*s + r goes to client r mod N),
//             so no sample is dropped; set S = N*s for exactly s each.
//
//  own        Not computed here: a daemon reads its own folder.
#ifndef SHEFL_COMMON_FED_PARTITION_H_
#define SHEFL_COMMON_FED_PARTITION_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"

namespace shefl {

// How many times Dirichlet proportions are redrawn to meet min_samples.
inline constexpr int kMaxDirichletAttempts = 1000;

// The sample indices of client `client_id` (ascending). Builds only this
// client's list; per-class proportions for all clients are computed, other
// clients' index lists are not. Bad arguments give InvalidArgument naming
// the parameter (partition.alpha, client_id, num_clients, partition.shards,
// ...); scheme "own" and unknown schemes are InvalidArgument too.
absl::StatusOr<std::vector<int64_t>> ClientIndices(
    const PartitionConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t num_clients, int64_t client_id,
    uint64_t seed);

// The indices of each of `client_ids` (in that order), from one
// computation of the plan: a daemon hosting thousands of clients pays for
// the partition once, not once a client. Entry i equals
// ClientIndices(..., client_ids[i], seed); the errors are ClientIndices'.
absl::StatusOr<std::vector<std::vector<int64_t>>> ClientsIndices(
    const PartitionConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t num_clients,
    const std::vector<int64_t>& client_ids, uint64_t seed);

// Every client's indices, [client][...] ascending; entry j equals
// ClientIndices(..., j, seed) exactly. For tests and server statistics.
absl::StatusOr<std::vector<std::vector<int64_t>>> Partition(
    const PartitionConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t num_clients, uint64_t seed);

// counts[k] = how many of `indices` have label k. Indices must be valid
// positions in `labels` and labels must lie in [0, num_classes).
std::vector<int64_t> LabelCounts(const std::vector<int64_t>& labels,
                                 const std::vector<int64_t>& indices,
                                 int64_t num_classes);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_PARTITION_H_
