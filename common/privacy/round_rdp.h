// What one round costs, by privacy.mode (docs/PRIVACY.md, "The
// accountant"), for one tier sampled at rate q:
//  - central: the subsampled Gaussian of multiplier z (SubsampledGaussianRdp);
//  - distributed: the Skellam mechanism on the secure sums, Poisson-
//    subsampled by Zhu and Wang's bound at the integer orders (+inf at the
//    fractional ones; at q = 1, unsampled, every order counts). Its
//    unsampled RDP is SkellamRdp(mu, d1, d2) with
//    the sum's variance mu = (z D2)^2, D2 = B + sqrt(M K) the L2
//    sensitivity in integer units (B = S 2^f the clipped update, sqrt(M K)
//    what stochastic rounding can add) and d1 <= D2^2 (an integer
//    vector's L1 norm is at most its squared L2 norm). That RDP is
//    alpha / (2 z^2) + min((2 alpha + 5) / (4 z^4 D2^2), 3 / (2 z^2)), which
//    falls as D2 grows; it is charged at D2 = B, an upper bound that needs
//    neither K nor the model's size, and the parties' noise is set at the
//    true D2 (common/fed/privacy_plan.h).
// Pure functions; thread-safe.
#ifndef SHEFL_COMMON_PRIVACY_ROUND_RDP_H_
#define SHEFL_COMMON_PRIVACY_ROUND_RDP_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/privacy/rdp_accountant.h"

namespace shefl {

// The distributed mechanism's one-round RDP at `orders`: Skellam of
// variance (z b)^2 with d1 = b^2, d2 = b, subsampled at q.
std::vector<double> DistributedSkellamRdp(double q, double z, double b,
                                          const std::vector<double>& orders);

// B = S 2^f: one client's clipped round in integer units (distributed).
double DistributedUnit(const ExperimentConfig& c);

// One round's RDP at DefaultRdpOrders() for a tier sampled at q, under
// c.privacy.mode (central or distributed) with multiplier z.
std::vector<double> RoundRdp(const ExperimentConfig& c, double z, double q);

// Epsilon after `rounds` rounds at q and z.
PrivacySpent RoundSpent(const ExperimentConfig& c, double z, double q,
                        int64_t rounds, double delta);

// The least z (to 1e-4 relative; the z returned reaches the target) with
// which `rounds` rounds at q spend epsilon <= target at delta. 0 when q or
// rounds is 0. InvalidArgument on bad figures or when even z = 1e4 spends
// more.
absl::StatusOr<double> RoundNoiseForTarget(const ExperimentConfig& c,
                                           double q, int64_t rounds,
                                           double delta, double target);

}  // namespace shefl

#endif  // SHEFL_COMMON_PRIVACY_ROUND_RDP_H_
