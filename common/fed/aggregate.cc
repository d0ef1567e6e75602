#include "common/fed/aggregate.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <system_error>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/fed/robust.h"

namespace shefl {

PaperCoefficients PaperEq2(const CohortShape& s) {
  const double M = static_cast<double>(s.num_models);
  const double num = M * s.num_hpc + s.num_lpc;
  return {num / (2 * M * M), num / (2 * M)};
}

PaperCoefficients PaperPerModel(int64_t hpc_received, int64_t lpc_received) {
  const double H = static_cast<double>(hpc_received);
  const double L = static_cast<double>(lpc_received);
  if (L == 0) return {H > 0 ? 1.0 : 0.0, 0.0};
  if (H == 0) return {0.0, 1.0};
  return {(H + L) / (2 * H), (H + L) / (2 * L)};
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

namespace {

constexpr uint64_t kTile = uint64_t{1} << 15;  // 256 KiB of doubles: L2
constexpr uint64_t kMaxThreads = 2;
constexpr uint64_t kMinWeightsPerThread = uint64_t{1} << 20;

// Folds weights [from, to) tile by tile: each update's entries in the tile,
// in client-id order, into one double accumulator, then one rounding to
// float per weight: per weight the same sums in the same order as one dense
// accumulator, with the accumulator in cache and the updates streamed once.
void FoldRange(const std::vector<ReceivedUpdate>& updates,
               const std::vector<double>& coef, uint64_t from, uint64_t to,
               float* w) {
  if (from >= to) return;
  std::vector<double> acc(std::min(kTile, to - from));  // acc[j - base]
  std::vector<size_t> pos;  // each update's cursor: first index >= base
  for (const ReceivedUpdate& u : updates)
    pos.push_back(static_cast<size_t>(
        std::lower_bound(u.delta.indices.begin(), u.delta.indices.end(),
                         from) -
        u.delta.indices.begin()));
  for (uint64_t base = from; base < to; base += kTile) {
    const uint64_t end = std::min(to, base + kTile);
    std::fill(acc.begin(), acc.begin() + (end - base), 0.0);
    for (size_t u = 0; u < updates.size(); ++u) {
      const uint32_t* idx = updates[u].delta.indices.data();
      const float* val = updates[u].delta.values.data();
      const size_t nnz = updates[u].delta.indices.size();
      const double c = coef[u];
      size_t p = pos[u];
      for (; p < nnz && idx[p] < end; ++p) acc[idx[p] - base] += c * val[p];
      pos[u] = p;
    }
    for (uint64_t j = base; j < end; ++j)
      if (acc[j - base] != 0) w[j] = static_cast<float>(w[j] + acc[j - base]);
  }
}

}  // namespace

ModelAggregator::ModelAggregator(const AggregationConfig& config,
                                 const CohortShape& shape, uint64_t dim)
    : config_(config),
      shape_(shape),
      dim_(dim),
      streamed_(config.reduction == "fixed_point"),
      by_samples_(config.weight_by_samples && config.rule != "paper" &&
                  config.rule != "paper_per_model") {
  if (streamed_) sums_.assign(2, FixedPointSum(dim));
}

int ModelAggregator::Group(Tier tier) const {
  return config_.rule == "uniform" ? 0 : (tier == Tier::kHpc ? 0 : 1);
}

double ModelAggregator::Weight(const ReceivedUpdate& u) const {
  return by_samples_ ? u.num_samples : 1.0;
}

absl::Status ModelAggregator::Add(ReceivedUpdate u) {
  const int64_t client = u.client_id;
  SHEFL_RETURN_IF_ERROR(ValidateSparseDelta(u.delta, dim_));
  if (!(u.num_samples > 0) || !std::isfinite(u.num_samples))
    return absl::InvalidArgumentError(
        absl::StrCat("client ", u.client_id, ": sample weight must be > 0"));
  if (seen_.count(u.client_id))
    return absl::AlreadyExistsError(absl::StrCat(
        "client ", u.client_id, " already sent an update for this model"));
  if (streamed_) {
    const int g = Group(u.tier);
    if (auto st = sums_[g].Add(u.delta, Weight(u)); !st.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("client ", u.client_id, ": ", st.message()));
    mass_[g] += Weight(u);
    norms_.push_back(L2Norm(u.delta));
  } else {
    updates_.push_back(std::move(u));
  }
  seen_.insert(client);
  return absl::OkStatus();
}

absl::Status ModelAggregator::ApplyTo(std::vector<float>* weights) {
  if (weights->size() != dim_)
    return absl::InvalidArgumentError(absl::StrCat(
        "model has ", weights->size(), " weights, aggregator expects ", dim_));
  if (num_updates() == 0) return absl::OkStatus();
  if (streamed_) return ApplyStreamed(weights);
  std::sort(updates_.begin(), updates_.end(),
            [](const ReceivedUpdate& a, const ReceivedUpdate& b) {
              return a.client_id < b.client_id;
            });
  const std::vector<double> coef = Coefficients();
  // Contiguous ranges of weights on up to kMaxThreads threads: each weight
  // is folded by exactly one of them, the same way, so the result does not
  // depend on how many there are.
  const uint64_t parts = std::clamp<uint64_t>(
      std::min<uint64_t>(std::thread::hardware_concurrency(), kMaxThreads), 1,
      std::max<uint64_t>(1, dim_ / kMinWeightsPerThread));
  float* w = weights->data();
  auto bound = [&](uint64_t p) { return dim_ * p / parts; };
  std::vector<std::thread> threads;
  for (uint64_t p = 1; p < parts; ++p) {
    try {
      threads.emplace_back(FoldRange, std::cref(updates_), std::cref(coef),
                           bound(p), bound(p + 1), w);
    } catch (const std::system_error&) {  // no thread: fold it here
      FoldRange(updates_, coef, bound(p), bound(p + 1), w);
    }
  }
  FoldRange(updates_, coef, 0, bound(1), w);
  for (std::thread& t : threads) t.join();
  return absl::OkStatus();
}

// fixed_point: per weight, each group's exact sum times the group's
// coefficient, added in double, then one rounding to float. A weight no
// update touched (or whose terms cancelled exactly) keeps its bits.
absl::Status ModelAggregator::ApplyStreamed(std::vector<float>* weights) const {
  const std::array<double, 2> scale =
      GroupScales(mass_, static_cast<size_t>(seen_.size()));
  float* w = weights->data();
  for (uint64_t j = 0; j < dim_; ++j) {
    double v = 0;
    for (int g = 0; g < 2; ++g)
      if (!sums_[g].empty()) v += scale[g] * sums_[g].Get(j);
    if (v != 0) w[j] = static_cast<float>(w[j] + v);
  }
  return absl::OkStatus();
}

// Every rule is a weighted sum of the deltas, one coefficient per group
// times the update's weight.
std::array<double, 2> ModelAggregator::GroupScales(const double mass[2],
                                                   size_t n) const {
  const std::string& rule = config_.rule;
  double scale[2] = {0, 0};
  if (rule == "paper" && !shape_.hpc_subsets) {
    const PaperCoefficients p = PaperEq2(shape_);
    scale[0] = p.a_h / n;
    scale[1] = p.a_l / n;
  } else if (rule == "paper_per_model" || rule == "paper") {
    const int64_t h = static_cast<int64_t>(mass[0]);  // counts: unweighted
    const int64_t l = static_cast<int64_t>(mass[1]);
    const PaperCoefficients p = PaperPerModel(h, l);
    scale[0] = p.a_h / n;
    scale[1] = p.a_l / n;
  } else if (rule == "uniform") {
    scale[0] = 1.0 / mass[0];
  } else {  // workload_aware
    double beta = config_.hpc_share;
    if (mass[1] == 0) beta = 1;
    if (mass[0] == 0) beta = 0;
    if (mass[0] > 0) scale[0] = beta / mass[0];
    if (mass[1] > 0) scale[1] = (1 - beta) / mass[1];
  }
  return {config_.server_lr * scale[0], config_.server_lr * scale[1]};
}

// client_order: each (sorted) update's coefficient.
std::vector<double> ModelAggregator::Coefficients() const {
  double mass[2] = {0, 0};
  for (const ReceivedUpdate& u : updates_) mass[Group(u.tier)] += Weight(u);
  const std::array<double, 2> scale = GroupScales(mass, updates_.size());
  std::vector<double> coef;
  for (const ReceivedUpdate& u : updates_)
    coef.push_back(scale[Group(u.tier)] * Weight(u));
  return coef;
}

std::map<int64_t, double> ModelAggregator::CoefficientsByClient() const {
  const std::vector<double> coef = Coefficients();
  std::map<int64_t, double> out;
  for (size_t i = 0; i < updates_.size(); ++i)
    out[updates_[i].client_id] = coef[i];
  return out;
}

}  // namespace shefl
