// FENS's proxy split (002, section 3.2): the coordinator holds a seeded
// fraction of the training set to train its aggregator on; the clients'
// partition covers only the rest, so no sample is both a client's and the
// server's. Pure functions of (config, labels, seed), like the partition:
// each daemon and the coordinator compute the same split on their own.
// Torch-free.
#ifndef SHEFL_COMMON_FED_FENS_SPLIT_H_
#define SHEFL_COMMON_FED_FENS_SPLIT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"

namespace shefl {

struct ProxySplit {
  std::vector<int64_t> proxy;  // held at the coordinator, ascending
  std::vector<int64_t> rest;   // partitioned among the clients, ascending
};

// One seeded shuffle of 0..n-1 (MakeRng(seed, kPartition, {proxy tag, n}));
// the first round(fraction * n) positions are the proxy set. fraction 0
// gives an empty proxy set (the non-trainable aggregators need none).
ProxySplit SplitProxy(int64_t n, double fraction, uint64_t seed);

// The training-set indices (ascending) of `client_id` under `config`:
// for method fens the partition of the non-proxy samples, mapped back to
// training-set positions; for every other method ClientIndices itself.
absl::StatusOr<std::vector<int64_t>> TrainingIndices(
    const ExperimentConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t client_id);

// The indices of each of `client_ids`, in that order, the partition
// computed once (entry i equals TrainingIndices(..., client_ids[i])).
absl::StatusOr<std::vector<std::vector<int64_t>>> TrainingIndicesOf(
    const ExperimentConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, const std::vector<int64_t>& client_ids);

// Every client's indices (entry j equals TrainingIndices(..., j)).
absl::StatusOr<std::vector<std::vector<int64_t>>> AllTrainingIndices(
    const ExperimentConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_FENS_SPLIT_H_
