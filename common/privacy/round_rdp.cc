#include "common/privacy/round_rdp.h"

#include <cmath>
#include <functional>

#include "absl/strings/str_cat.h"

namespace shefl {

namespace {

// The least z in [1e-4, 1e4] whose epsilon is <= target (epsilon falls as z
// grows), to 1e-4 relative, by bisection on log z.
absl::StatusOr<double> LeastNoise(const std::function<double(double)>& epsilon_at,
                                  double target) {
  double lo = 1e-4, hi = 1e4;
  if (epsilon_at(hi) > target)
    return absl::InvalidArgumentError(absl::StrCat(
        "no noise multiplier up to 1e4 keeps epsilon within ", target));
  if (epsilon_at(lo) <= target) return lo;
  while (hi > lo * (1 + 1e-4)) {
    const double mid = std::sqrt(lo * hi);
    (epsilon_at(mid) <= target ? hi : lo) = mid;
  }
  return hi;
}

}  // namespace

std::vector<double> DistributedSkellamRdp(double q, double z, double b,
                                          const std::vector<double>& orders) {
  const double mu = (z * b) * (z * b);
  const std::vector<double> unsampled = SkellamRdp(mu, b * b, b, orders);
  // Without sampling the Skellam's own RDP holds at every order, the
  // fractional ones too (Zhu and Wang's bound has integer orders only).
  if (q == 1) return unsampled;
  return PoissonSubsampledRdp(q, unsampled, orders);
}

double DistributedUnit(const ExperimentConfig& c) {
  return std::ldexp(c.privacy.clip, static_cast<int>(c.secure.scale_bits));
}

std::vector<double> RoundRdp(const ExperimentConfig& c, double z, double q) {
  if (c.privacy.mode == "distributed")
    return DistributedSkellamRdp(q, z, DistributedUnit(c), DefaultRdpOrders());
  return SubsampledGaussianRdp(q, z, DefaultRdpOrders());
}

PrivacySpent RoundSpent(const ExperimentConfig& c, double z, double q,
                        int64_t rounds, double delta) {
  RdpAccountant a;
  a.Compose(RoundRdp(c, z, q), rounds);
  return a.Spent(delta);
}

absl::StatusOr<double> RoundNoiseForTarget(const ExperimentConfig& c,
                                           double q, int64_t rounds,
                                           double delta, double target) {
  if (c.privacy.mode != "distributed")
    return NoiseForTarget(q, rounds, delta, target);
  if (absl::Status s = CheckSampledGaussian(q, 0); !s.ok()) return s;
  if (absl::Status s = CheckDelta(delta); !s.ok()) return s;
  if (rounds < 0 || !(target > 0) || !std::isfinite(target))
    return absl::InvalidArgumentError(absl::StrCat(
        "rounds = ", rounds, " and target epsilon = ", target,
        ": need rounds >= 0 and a finite target > 0"));
  if (q == 0 || rounds == 0) return 0.0;
  return LeastNoise(
      [&](double z) { return RoundSpent(c, z, q, rounds, delta).epsilon; },
      target);
}

}  // namespace shefl
