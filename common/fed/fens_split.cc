#include "common/fed/fens_split.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/core/rng.h"
#include "common/core/status_macros.h"
#include "common/fed/methods/registry.h"
#include "common/fed/partition.h"

namespace shefl {
namespace {

// A tag of the partition purpose that no partition scheme uses (theirs
// are 1-4), so the proxy draw never shares a stream with a partition.
constexpr uint64_t kTagFensProxy = 0xFE45;

// labels[rest[i]] for every i: the partition sees only the non-proxy rows.
std::vector<int64_t> RestLabels(const std::vector<int64_t>& labels,
                                const std::vector<int64_t>& rest) {
  std::vector<int64_t> out;
  out.reserve(rest.size());
  for (int64_t i : rest) out.push_back(labels[i]);
  return out;
}

}  // namespace

ProxySplit SplitProxy(int64_t n, double fraction, uint64_t seed) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  auto rng = MakeRng(seed, SeedPurpose::kPartition,
                     {kTagFensProxy, static_cast<uint64_t>(n)});
  Shuffle(order, rng);
  const auto k = static_cast<int64_t>(std::llround(fraction * n));
  ProxySplit s;
  s.proxy.assign(order.begin(), order.begin() + std::clamp<int64_t>(k, 0, n));
  s.rest.assign(order.begin() + s.proxy.size(), order.end());
  std::sort(s.proxy.begin(), s.proxy.end());
  std::sort(s.rest.begin(), s.rest.end());
  return s;
}

absl::StatusOr<std::vector<int64_t>> TrainingIndices(
    const ExperimentConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t client_id) {
  SHEFL_ASSIGN_OR_RETURN(
      auto one, TrainingIndicesOf(config, labels, num_classes, {client_id}));
  return std::move(one.front());
}

absl::StatusOr<std::vector<std::vector<int64_t>>> TrainingIndicesOf(
    const ExperimentConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, const std::vector<int64_t>& client_ids) {
  const int64_t n_clients = config.clients.num_clients;
  if (TraitsOf(config.method).round_shape != RoundShape::kOneShot)
    return ClientsIndices(config.partition, labels, num_classes, n_clients,
                          client_ids, config.seed);
  const ProxySplit split = SplitProxy(static_cast<int64_t>(labels.size()),
                                      config.fens.proxy_fraction, config.seed);
  SHEFL_ASSIGN_OR_RETURN(
      auto idx,
      ClientsIndices(config.partition, RestLabels(labels, split.rest),
                     num_classes, n_clients, client_ids, config.seed));
  // rest is ascending, so mapped positions stay ascending.
  for (auto& client : idx)
    for (int64_t& i : client) i = split.rest[i];
  return idx;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> AllTrainingIndices(
    const ExperimentConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes) {
  const int64_t n_clients = config.clients.num_clients;
  if (TraitsOf(config.method).round_shape != RoundShape::kOneShot)
    return Partition(config.partition, labels, num_classes, n_clients,
                     config.seed);
  const ProxySplit split = SplitProxy(static_cast<int64_t>(labels.size()),
                                      config.fens.proxy_fraction, config.seed);
  SHEFL_ASSIGN_OR_RETURN(
      auto all, Partition(config.partition, RestLabels(labels, split.rest),
                          num_classes, n_clients, config.seed));
  for (auto& client : all)
    for (int64_t& i : client) i = split.rest[i];
  return all;
}

}  // namespace shefl
