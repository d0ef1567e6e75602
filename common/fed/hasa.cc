#include "common/fed/hasa.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace shefl {

double JensenShannon(const std::vector<double>& p,
                     const std::vector<double>& q) {
  double js = 0;
  for (size_t v = 0; v < p.size() && v < q.size(); ++v) {
    const double m = 0.5 * (p[v] + q[v]);
    if (p[v] > 0) js += 0.5 * p[v] * std::log(p[v] / m);
    if (q[v] > 0) js += 0.5 * q[v] * std::log(q[v] / m);
  }
  return js;
}

namespace {

std::vector<double> Smoothed(const std::vector<double>& counts, double a) {
  double total = 0;
  for (double c : counts) total += c + a;
  std::vector<double> p(counts.size());
  for (size_t v = 0; v < counts.size(); ++v)
    p[v] = total > 0 ? (counts[v] + a) / total : 0;
  return p;
}

}  // namespace

std::vector<double> HeterogeneityScores(
    const std::vector<std::vector<uint64_t>>& counts, double smoothing) {
  size_t classes = 0;
  for (const auto& c : counts) classes = std::max(classes, c.size());
  std::vector<double> pooled(classes, 0.0);
  for (const auto& c : counts)
    for (size_t v = 0; v < c.size(); ++v) pooled[v] += static_cast<double>(c[v]);
  const std::vector<double> pg = Smoothed(pooled, smoothing);
  std::vector<double> h;
  for (const auto& c : counts) {
    std::vector<double> own(classes, 0.0);
    for (size_t v = 0; v < c.size(); ++v) own[v] = static_cast<double>(c[v]);
    h.push_back(JensenShannon(Smoothed(own, smoothing), pg));
  }
  return h;
}

std::vector<double> RankNormalise(const std::vector<double>& scores) {
  const size_t K = scores.size();
  std::vector<double> out(K, 0.5);
  if (K < 2) return out;
  std::vector<size_t> order(K);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] < scores[b]; });
  for (size_t i = 0; i < K;) {
    size_t j = i;
    while (j + 1 < K && scores[order[j + 1]] == scores[order[i]]) ++j;
    const double rank = 0.5 * static_cast<double>(i + j) + 1;  // 1-based mean
    for (size_t k = i; k <= j; ++k)
      out[order[k]] = (rank - 1) / static_cast<double>(K - 1);
    i = j + 1;
  }
  return out;
}

std::vector<double> MinMaxNormalise(const std::vector<double>& sizes) {
  std::vector<double> out(sizes.size(), 0.5);
  if (sizes.empty()) return out;
  const auto [lo, hi] = std::minmax_element(sizes.begin(), sizes.end());
  if (!(*hi > *lo)) return out;
  for (size_t i = 0; i < sizes.size(); ++i)
    out[i] = (sizes[i] - *lo) / (*hi - *lo);
  return out;
}

double SizeWeightedMean(const std::vector<double>& widths,
                        const std::vector<double>& sizes) {
  double n = 0, acc = 0;
  for (size_t i = 0; i < widths.size(); ++i) {
    n += sizes[i];
    acc += sizes[i] * widths[i];
  }
  return n > 0 ? acc / n : 0;
}

std::vector<double> ScaleAndProject(std::vector<double> r,
                                    const std::vector<double>& sizes,
                                    const std::vector<double>& caps,
                                    double r_min, double budget,
                                    int64_t passes, double tolerance) {
  for (int64_t t = 0; t < passes + 100; ++t) {
    const double mean = SizeWeightedMean(r, sizes);
    if (!(mean > 0)) break;
    if (t >= passes && !(tolerance > 0 && std::fabs(mean - budget) > tolerance))
      break;
    const double s = budget / mean;
    // 003 Eq. 15: min(max(x, a), b); a cap below r_min wins (a device
    // cannot train more than it declared).
    for (size_t i = 0; i < r.size(); ++i)
      r[i] = std::min(std::max(s * r[i], r_min), caps[i]);
  }
  return r;
}

absl::StatusOr<HasaAllocation> AllocateHasa(
    const HasaConfig& cfg, int64_t num_models, const std::vector<double>& sizes,
    const std::vector<std::vector<uint64_t>>& label_counts,
    const std::vector<double>& declared) {
  const size_t K = sizes.size();
  if (label_counts.size() != K || declared.size() != K)
    return absl::InvalidArgumentError(absl::StrCat(
        "HASA: ", K, " shard sizes, ", label_counts.size(),
        " label histograms and ", declared.size(), " capacities"));
  for (size_t i = 0; i < K; ++i)
    if (!(sizes[i] >= 1))
      return absl::InvalidArgumentError(
          absl::StrCat("HASA: client ", i, " has shard size ", sizes[i]));
  const double M = static_cast<double>(std::max<int64_t>(num_models, 1));
  HasaAllocation out;
  const bool by_labels = cfg.allocation == "hasa" ||
                         cfg.allocation == "inverse" ||
                         cfg.allocation == "mixed";
  out.score = by_labels ? HeterogeneityScores(label_counts, cfg.smoothing)
                        : std::vector<double>(K, 0.0);
  const std::vector<double> h = RankNormalise(out.score);
  const std::vector<double> n = MinMaxNormalise(sizes);
  std::vector<double> r0(K, cfg.budget);
  out.normalised.assign(K, 0.0);
  for (size_t i = 0; i < K; ++i) {
    double s = h[i];
    if (cfg.allocation == "inverse") s = 1 - h[i];
    if (cfg.allocation == "size") s = n[i];
    if (cfg.allocation == "mixed") s = cfg.gamma * n[i] + (1 - cfg.gamma) * h[i];
    if (cfg.allocation == "uniform") continue;
    out.normalised[i] = s;
    r0[i] = cfg.r_min + (cfg.r_max - cfg.r_min) * s;
  }
  for (size_t i = 0; i < K; ++i)
    out.cap.push_back(declared[i] > 0 ? std::min(cfg.r_max, declared[i] / M)
                                      : cfg.r_max);
  out.width = ScaleAndProject(std::move(r0), sizes, out.cap, cfg.r_min,
                              cfg.budget, cfg.passes,
                              kHasaBudgetTolerance);
  out.budget = SizeWeightedMean(out.width, sizes);
  return out;
}

}  // namespace shefl
