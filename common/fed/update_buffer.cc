#include "common/fed/update_buffer.h"

#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"

namespace shefl {

absl::StatusOr<StalenessRule> ParseStaleness(const std::string& text) {
  if (text == "sqrt") return StalenessRule{0.5};
  if (text == "none") return StalenessRule{0.0};
  double a = 0;
  if (absl::StartsWith(text, "poly:") &&
      absl::SimpleAtod(text.substr(5), &a) && a > 0 && a <= 100)
    return StalenessRule{a};
  return absl::InvalidArgumentError(
      absl::StrCat("'", text, "' is not sqrt, none or poly:A with 0 < A <= 100"));
}

double StalenessWeight(const StalenessRule& rule, int64_t tau) {
  if (rule.exponent == 0) return 1.0;
  if (rule.exponent == 0.5) return 1.0 / std::sqrt(1.0 + static_cast<double>(tau));
  return std::pow(1.0 + static_cast<double>(tau), -rule.exponent);
}

AggregationConfig BufferAggregation(const ExperimentConfig& config) {
  AggregationConfig agg = config.aggregation;
  agg.weight_by_samples = true;
  agg.server_lr = config.aggregation.server_lr * config.buffered.server_lr;
  return agg;
}

int64_t BufferSize(const ExperimentConfig& config) {
  const int64_t cohort =
      config.clients.per_round_hpc + config.clients.per_round_lpc;
  return config.buffered.size > 0 ? config.buffered.size : cohort;
}

int64_t BufferConcurrency(const ExperimentConfig& config) {
  const int64_t cohort =
      config.clients.per_round_hpc + config.clients.per_round_lpc;
  return config.buffered.concurrency > 0 ? config.buffered.concurrency : cohort;
}

UpdateBuffer::UpdateBuffer(const ExperimentConfig& config,
                           const CohortShape& shape, uint64_t dim)
    : agg_(BufferAggregation(config)),
      shape_(shape),
      dim_(dim),
      // Checked when the config loaded (common/fed/buffered_plan.cc).
      rule_(ParseStaleness(config.buffered.staleness).value_or(StalenessRule{})),
      size_(BufferSize(config)),
      max_staleness_(config.buffered.max_staleness),
      by_samples_(config.aggregation.weight_by_samples),
      aggregator_(agg_, shape_, dim_) {}

absl::Status UpdateBuffer::Add(int64_t ticket, ReceivedUpdate update,
                               uint64_t trained_from, uint64_t now) {
  if (trained_from > now)
    return absl::InvalidArgumentError(
        absl::StrCat("trained from version ", trained_from,
                     ", which the model (at ", now, ") has not reached"));
  const auto tau = static_cast<int64_t>(now - trained_from);
  if (tau > max_staleness_)
    return absl::FailedPreconditionError(
        absl::StrCat("stale: trained from version ", trained_from, ", ", tau,
                     " applications ago (buffered.max_staleness ",
                     max_staleness_, ")"));
  const double w = by_samples_ ? update.num_samples : 1.0;
  Entry e{ticket, update.client_id, trained_from, tau,
          w * StalenessWeight(rule_, tau)};
  update.num_samples = e.weight;
  SHEFL_RETURN_IF_ERROR(aggregator_.Add(std::move(update)));
  entries_.push_back(e);
  return absl::OkStatus();
}

ModelAggregator UpdateBuffer::Take(std::vector<Entry>* entries) {
  *entries = std::move(entries_);
  entries_.clear();
  ModelAggregator out = std::move(aggregator_);
  aggregator_ = ModelAggregator(agg_, shape_, dim_);
  return out;
}

}  // namespace shefl
