#include "common/aggregate.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace shefl {

PaperCoefficients PaperEq2(const CohortShape& s) {
  const double M = static_cast<double>(s.num_models);
  const double num = M * s.num_hpc + s.num_lpc;
  return {num / (2 * M * M), num / (2 * M)};
}

absl::Status ValidateSparseDelta(const SparseDelta& d, uint64_t dim) {
  if (d.dim != dim)
    return absl::InvalidArgumentError(
        absl::StrCat("delta has dimension ", d.dim, ", model has ", dim));
  if (d.indices.size() != d.values.size())
    return absl::InvalidArgumentError(
        absl::StrCat("delta has ", d.indices.size(), " indices but ",
                     d.values.size(), " values"));
  for (size_t i = 0; i < d.indices.size(); ++i) {
    if (d.indices[i] >= dim)
      return absl::InvalidArgumentError(absl::StrCat(
          "index ", d.indices[i], " at position ", i, " is out of range"));
    if (i > 0 && d.indices[i] <= d.indices[i - 1])
      return absl::InvalidArgumentError(absl::StrCat(
          "indices not ascending at position ", i));
    if (!std::isfinite(d.values[i]))
      return absl::InvalidArgumentError(
          absl::StrCat("value at position ", i, " is NaN or infinite"));
  }
  return absl::OkStatus();
}

ModelAggregator::ModelAggregator(const AggregationConfig& config,
                                 const CohortShape& shape, uint64_t dim)
    : config_(config), shape_(shape), dim_(dim) {}

absl::Status ModelAggregator::Add(ReceivedUpdate u) {
  if (auto st = ValidateSparseDelta(u.delta, dim_); !st.ok()) return st;
  if (!(u.num_samples > 0) || !std::isfinite(u.num_samples))
    return absl::InvalidArgumentError(
        absl::StrCat("client ", u.client_id, ": sample weight must be > 0"));
  for (const ReceivedUpdate& have : updates_)
    if (have.client_id == u.client_id)
      return absl::AlreadyExistsError(absl::StrCat(
          "client ", u.client_id, " already sent an update for this model"));
  updates_.push_back(std::move(u));
  return absl::OkStatus();
}

absl::Status ModelAggregator::ApplyTo(std::vector<float>* weights) {
  if (weights->size() != dim_)
    return absl::InvalidArgumentError(absl::StrCat(
        "model has ", weights->size(), " weights, aggregator expects ", dim_));
  if (updates_.empty()) return absl::OkStatus();
  std::sort(updates_.begin(), updates_.end(),
            [](const ReceivedUpdate& a, const ReceivedUpdate& b) {
              return a.client_id < b.client_id;
            });
  const std::vector<double> coef = Coefficients();
  // One pass in client-id order, one double accumulator, one rounding to
  // float per weight.
  std::vector<double> step(dim_, 0.0);
  for (size_t u = 0; u < updates_.size(); ++u) {
    const auto& idx = updates_[u].delta.indices;
    const auto& val = updates_[u].delta.values;
    for (size_t i = 0; i < idx.size(); ++i) step[idx[i]] += coef[u] * val[i];
  }
  float* w = weights->data();
  for (uint64_t j = 0; j < dim_; ++j)
    if (step[j] != 0) w[j] = static_cast<float>(w[j] + step[j]);
  return absl::OkStatus();
}

// Every rule is a weighted sum of the deltas; this gives each (sorted)
// update its weight, eta included.
std::vector<double> ModelAggregator::Coefficients() const {
  const std::string& rule = config_.rule;
  const bool by_samples = config_.weight_by_samples && rule != "paper";
  auto group = [&](const ReceivedUpdate& u) {
    return rule == "uniform" ? 0 : (u.tier == Tier::kHpc ? 0 : 1);
  };
  double mass[2] = {0, 0};  // group 0: HPC (or everyone), 1: LPC
  for (const ReceivedUpdate& u : updates_)
    mass[group(u)] += by_samples ? u.num_samples : 1.0;
  double scale[2] = {0, 0};
  if (rule == "paper") {
    const PaperCoefficients p = PaperEq2(shape_);
    scale[0] = p.a_h / updates_.size();
    scale[1] = p.a_l / updates_.size();
  } else if (rule == "uniform") {
    scale[0] = 1.0 / mass[0];
  } else {  // workload_aware
    double beta = config_.hpc_share;
    if (mass[1] == 0) beta = 1;
    if (mass[0] == 0) beta = 0;
    if (mass[0] > 0) scale[0] = beta / mass[0];
    if (mass[1] > 0) scale[1] = (1 - beta) / mass[1];
  }
  std::vector<double> coef;
  for (const ReceivedUpdate& u : updates_)
    coef.push_back(config_.server_lr * scale[group(u)] *
                   (by_samples ? u.num_samples : 1.0));
  return coef;
}

}  // namespace shefl
