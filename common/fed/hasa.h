// HASA-style allocation (003, section IV, Algorithm 1), applied to the
// ensemble: a client's "width" r_i is the share of the M models it trains
// a round (capacity c_i = r_i * M, common/fed/capacity.h turns it into models).
//
//   1. Score: h_i = JSD(p_i || p_g) between the client's smoothed label
//      histogram p_i(v) = (c_iv + a) / sum_u (c_iu + a) and the pooled one
//      p_g (the sum of every client's counts, smoothed alike); natural
//      log (the base does not matter: the next step is rank-based).
//   2. Rank-normalise: h~_i = (rank(h_i) - 1) / (K - 1), rank 1 the
//      smallest, ties at their average rank (K = 1: 0.5).
//   3. Map: r_i^(0) = r_min + (r_max - r_min) * s_i, where s_i is h~_i
//      (hasa), 1 - h~_i (inverse), the min-max size score n~_i (size; 0.5
//      when all sizes are equal), gamma * n~_i + (1 - gamma) * h~_i
//      (mixed), or r_i^(0) = B for everyone (uniform).
//   4. Scale and project, T passes (T = 2 in 003):
//      s = B / sum_j (n_j / N) r_j,  r_i <- min(max(s * r_i, r_min), u_i)
//      with u_i = min(r_max, cap_i / M), cap_i the models the client's
//      daemon declares it can train (M when it declares none). As in 003,
//      the realised budget sum_i (n_i / N) r_i can miss B by a little after
//      the clamps (003 reports 49.6% for B = 50%); where it misses by more
//      than kHasaBudgetTolerance (0.005), further passes (at most 100) close the
//      gap. The realised budget is reported.
#ifndef SHEFL_COMMON_FED_HASA_H_
#define SHEFL_COMMON_FED_HASA_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"

namespace shefl {

// Jensen-Shannon divergence of two distributions of equal length (natural
// log; terms with a zero probability count as 0).
double JensenShannon(const std::vector<double>& p, const std::vector<double>& q);

// Step 1 for every client: counts[i] is client i's label histogram; shorter
// histograms count as zero-padded to the longest. smoothing = a > 0.
std::vector<double> HeterogeneityScores(
    const std::vector<std::vector<uint64_t>>& counts, double smoothing);

// Step 2 (average ranks for ties).
std::vector<double> RankNormalise(const std::vector<double>& scores);

// 003 Eq. 20: (n_i - min) / (max - min), 0.5 for everyone when all equal.
std::vector<double> MinMaxNormalise(const std::vector<double>& sizes);

// Step 4 from the preliminary widths r0.
// After `passes` passes, up to 100 more while the budget is missed by more
// than `tolerance` (> 0; a budget the caps cannot reach stays missed).
std::vector<double> ScaleAndProject(std::vector<double> r0,
                                    const std::vector<double>& sizes,
                                    const std::vector<double>& caps,
                                    double r_min, double budget, int64_t passes,
                                    double tolerance = 0);

// How far from B the realised budget may be before AllocateHasa adds
// passes beyond hasa.passes: 003 reports 49.6% realised for B = 50%.
constexpr double kHasaBudgetTolerance = 0.005;

// sum_i (n_i / N) r_i.
double SizeWeightedMean(const std::vector<double>& widths,
                        const std::vector<double>& sizes);

struct HasaAllocation {
  std::vector<double> score;       // h_i (0 for every client under size/uniform)
  std::vector<double> normalised;  // s_i, the score the widths were mapped from
  std::vector<double> cap;         // u_i
  std::vector<double> width;       // r_i
  double budget = 0;               // realised sum_i (n_i / N) r_i
};

// The whole allocation for clients with these shard sizes, label
// histograms and declared capacities (in models; <= 0: none declared).
// InvalidArgument when the inputs disagree in length or a size is < 1.
absl::StatusOr<HasaAllocation> AllocateHasa(
    const HasaConfig& config, int64_t num_models,
    const std::vector<double>& sizes,
    const std::vector<std::vector<uint64_t>>& label_counts,
    const std::vector<double>& declared_capacity);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_HASA_H_
