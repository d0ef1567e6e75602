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

namespace {

// sum_i w_i * d_i into a dense accumulator, in the given (client) order.
void Accumulate(const ReceivedUpdate& u, double w, std::vector<double>* acc) {
  const auto& idx = u.delta.indices;
  const auto& val = u.delta.values;
  for (size_t i = 0; i < idx.size(); ++i) (*acc)[idx[i]] += w * val[i];
}

}  // namespace

absl::Status ModelAggregator::ApplyTo(std::vector<float>* weights) {
  if (weights->size() != dim_)
    return absl::InvalidArgumentError(absl::StrCat(
        "model has ", weights->size(), " weights, aggregator expects ", dim_));
  if (updates_.empty()) return absl::OkStatus();
  std::sort(updates_.begin(), updates_.end(),
            [](const ReceivedUpdate& a, const ReceivedUpdate& b) {
              return a.client_id < b.client_id;
            });
  const std::string& rule = config_.rule;
  const bool by_samples = config_.weight_by_samples && rule != "paper";
  // Group 0 is HPC, group 1 LPC; `uniform` puts everything in group 0.
  double coef[2] = {1, 1};
  if (rule == "paper") {
    PaperCoefficients p = PaperEq2(shape_);
    coef[0] = p.a_h / updates_.size();
    coef[1] = p.a_l / updates_.size();
  }
  std::vector<double> acc[2];
  double mass[2] = {0, 0};
  for (const ReceivedUpdate& u : updates_) {
    const int g = rule == "uniform" ? 0 : (u.tier == Tier::kHpc ? 0 : 1);
    const double p = by_samples ? u.num_samples : 1.0;
    if (acc[g].empty()) acc[g].assign(dim_, 0.0);
    Accumulate(u, p * coef[g], &acc[g]);
    mass[g] += p;
  }
  // Scale of each group's sum in the final update.
  double scale[2] = {0, 0};
  if (rule == "paper") {
    scale[0] = scale[1] = 1.0;
  } else if (rule == "uniform") {
    scale[0] = 1.0 / mass[0];
  } else {  // workload_aware
    double beta = config_.hpc_share;
    if (mass[1] == 0) beta = 1;
    if (mass[0] == 0) beta = 0;
    if (mass[0] > 0) scale[0] = beta / mass[0];
    if (mass[1] > 0) scale[1] = (1 - beta) / mass[1];
  }
  // One rounding to float per weight: the groups are combined in double.
  const double s0 = acc[0].empty() ? 0 : config_.server_lr * scale[0];
  const double s1 = acc[1].empty() ? 0 : config_.server_lr * scale[1];
  const double* a0 = acc[0].empty() ? nullptr : acc[0].data();
  const double* a1 = acc[1].empty() ? nullptr : acc[1].data();
  float* w = weights->data();
  for (uint64_t j = 0; j < dim_; ++j) {
    const double step = (a0 ? s0 * a0[j] : 0.0) + (a1 ? s1 * a1[j] : 0.0);
    if (step != 0) w[j] = static_cast<float>(w[j] + step);
  }
  return absl::OkStatus();
}

}  // namespace shefl
