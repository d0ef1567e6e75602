// One model's buffer under round.mode buffered (FedBuff, Nguyen et al.
// 2022; docs/DESIGN.md, "Buffered asynchronous rounds"). An update trained
// from version v of a model now at version V has staleness tau = V - v and
// enters the buffer with weight w s(tau), w the method's weight (1, or the
// shard size with aggregation.weight_by_samples); once the buffer holds
// `size` updates it is applied as one aggregate:
//   x <- x + eta_g sum(s w u) / sum(s w)
// with the run's rule (workload_aware normalises each tier's group on its
// own, as in a synchronous round), eta_g = aggregation.server_lr x
// buffered.server_lr. With every tau = 0 and eta_g as a synchronous run's,
// a buffer of the round's updates folds exactly as that round does.
// Thread-compatible: the round loop owns it.
#ifndef SHEFL_COMMON_FED_UPDATE_BUFFER_H_
#define SHEFL_COMMON_FED_UPDATE_BUFFER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/fed/aggregate.h"

namespace shefl {

// buffered.staleness: sqrt, poly:A (A > 0) or none.
struct StalenessRule {
  double exponent = 0.5;  // s(tau) = (1 + tau)^-exponent; none: 0
};
absl::StatusOr<StalenessRule> ParseStaleness(const std::string& text);
double StalenessWeight(const StalenessRule& rule, int64_t tau);

// Which config a buffer's aggregator runs: the run's rule and reduction,
// weights always on (they carry s(tau)), eta_g = aggregation.server_lr x
// buffered.server_lr.
AggregationConfig BufferAggregation(const ExperimentConfig& config);

class UpdateBuffer {
 public:
  // One update as it entered the buffer: what a replay needs.
  struct Entry {
    int64_t ticket = 0;
    int64_t client = 0;
    uint64_t trained_from = 0;  // the model version the task handed out
    int64_t staleness = 0;
    double weight = 0;          // w s(tau)
  };
  UpdateBuffer(const ExperimentConfig& config, const CohortShape& shape,
               uint64_t dim);

  // The update of `ticket`, trained from `trained_from`, with the model at
  // `now`: FAILED_PRECONDITION (reason "stale") past buffered.max_staleness
  // and INVALID_ARGUMENT for what ModelAggregator::Add refuses; the buffer
  // is unchanged on error. `update.num_samples` is the method's weight w.
  absl::Status Add(int64_t ticket, ReceivedUpdate update,
                   uint64_t trained_from, uint64_t now);
  bool Full() const { return static_cast<int64_t>(entries_.size()) >= size_; }
  int64_t fill() const { return static_cast<int64_t>(entries_.size()); }
  const std::vector<Entry>& entries() const { return entries_; }
  // The buffer's aggregator, to apply, and its entries; starts empty again.
  ModelAggregator Take(std::vector<Entry>* entries);

 private:
  AggregationConfig agg_;
  CohortShape shape_;
  uint64_t dim_;
  StalenessRule rule_;
  int64_t size_;
  int64_t max_staleness_;
  bool by_samples_;  // the run's aggregation.weight_by_samples
  ModelAggregator aggregator_;
  std::vector<Entry> entries_;
};

// buffered.size and buffered.concurrency with 0 resolved to the cohort.
int64_t BufferSize(const ExperimentConfig& config);
int64_t BufferConcurrency(const ExperimentConfig& config);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_UPDATE_BUFFER_H_
