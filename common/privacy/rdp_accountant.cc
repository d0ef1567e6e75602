#include "common/privacy/rdp_accountant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace shefl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Orders above this are not evaluated (a sum of alpha terms each).
constexpr double kMaxOrder = 100000;
// The bound on a fractional series. Its terms fall only polynomially when
// q is large (0.1 to 0.9 needs up to 9,300 terms at z <= 10); dp_accounting
// stops at 1,000 and drops the order, this sums the series out, and past
// the bound the chord of LogAChord bounds it.
constexpr int kMaxFractionalTerms = 10000;
// A series stops once both its terms fall, and fall e^30 (1e13) below the
// running total (dp_accounting's rule).
constexpr double kNegligibleLog = 30;

bool IsInteger(double a) { return std::isfinite(a) && a == std::floor(a); }

double LogAddExp(double a, double b) {
  if (a == -kInf) return b;
  if (b == -kInf) return a;
  const double hi = std::max(a, b);
  return hi + std::log1p(std::exp(std::min(a, b) - hi));
}

// log(sum_i exp(t_i)), scaled by the largest term so nothing overflows.
double LogSumExp(const std::vector<double>& t) {
  double hi = -kInf;
  for (double x : t) hi = std::max(hi, x);
  if (hi == -kInf || hi == kInf) return hi;
  double sum = 0;
  for (double x : t) sum += std::exp(x - hi);
  return hi + std::log(sum);
}

// log(erfc(x)); past x = 25 erfc nears the bottom of the doubles, so the
// asymptotic series e^-x^2 / (x sqrt(pi)) (1 - r + 3r^2 - 15r^3 + 105r^4),
// r = 1 / (2x^2), whose next term is below 1e-12 there.
double LogErfc(double x) {
  if (x < 25) return std::log(std::erfc(x));
  const double r = 1 / (2 * x * x);
  const double series = 1 - r * (1 - 3 * r * (1 - 5 * r * (1 - 7 * r)));
  const double log_sqrt_pi = 0.5 * std::log(std::acos(-1.0));
  return -x * x - std::log(x) - log_sqrt_pi + std::log(series);
}

// A real number as its sign and the log of its magnitude, for the signed
// sums (0 is log_mag = -inf).
struct SignedLog {
  bool negative = false;
  double log_mag = -kInf;

  void Add(bool term_negative, double term_log) {
    if (term_log == -kInf) return;
    if (log_mag == -kInf || negative == term_negative) {
      if (log_mag == -kInf) negative = term_negative;
      log_mag = LogAddExp(log_mag, term_log);
      return;
    }
    if (log_mag == term_log) {
      log_mag = -kInf;
      negative = false;
    } else if (log_mag > term_log) {
      log_mag += std::log1p(-std::exp(term_log - log_mag));
    } else {
      log_mag = term_log + std::log1p(-std::exp(log_mag - term_log));
      negative = term_negative;
    }
  }
};

// log(e^x - 1) for x > 0, without overflow for large x.
double LogExpm1(double x) {
  return x > 30 ? x + std::log1p(-std::exp(-x)) : std::log(std::expm1(x));
}

// log A_alpha at an integer alpha, 0 < q < 1, from the binomial expansion
// A = sum_i C(alpha,i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 z^2)). The
// binomial weights sum to 1, so A - 1 is the same sum with expm1 in place
// of exp, whose terms at i = 0, 1 vanish and the rest are positive: summing
// A - 1 keeps full precision when A is within 1e-16 of 1 (tiny q or large
// z), where log of the plain sum would be rounding noise.
double LogAInteger(double q, double z, int64_t alpha) {
  if (alpha < 2) return 0;  // A_1 = 1
  const double log_q = std::log(q), log_1mq = std::log1p(-q);
  const double a = static_cast<double>(alpha);
  std::vector<double> terms;
  terms.reserve(alpha);
  double log_c = std::log(a * (a - 1) / 2);  // log C(alpha, i) from i = 2
  for (int64_t i = 2; i <= alpha; ++i) {
    const double di = static_cast<double>(i);
    terms.push_back(log_c + di * log_q + (a - di) * log_1mq +
                    LogExpm1((di * di - di) / (2 * z * z)));
    log_c += std::log(a - di) - std::log(di + 1);
  }
  return LogAddExp(0, LogSumExp(terms));
}

// The two terms of the fractional series at index i (section 3.3): the
// integrals of A_alpha's expansion over (-inf, z0] and [z0, +inf).
std::pair<double, double> FractionalTerms(double q, double z, double alpha,
                                          double i, double log_c) {
  const double z0 = z * z * (std::log1p(-q) - std::log(q)) + 0.5;
  const double j = alpha - i;
  const double log_q = std::log(q), log_1mq = std::log1p(-q);
  const double s = std::sqrt(2.0) * z;
  const double t0 = log_c + i * log_q + j * log_1mq +
                    (i * i - i) / (2 * z * z) + std::log(0.5) +
                    LogErfc((i - z0) / s);
  const double t1 = log_c + j * log_q + i * log_1mq +
                    (j * j - j) / (2 * z * z) + std::log(0.5) +
                    LogErfc((z0 - j) / s);
  return {t0, t1};
}

// log A_alpha at a fractional alpha > 1, 0 < q < 1. Both sums are kept:
// the signed one falls back to the absolute one (an upper bound) should
// cancellation leave it without a positive value.
double LogAFractional(double q, double z, double alpha, FractionalSum sum) {
  double abs0 = -kInf, abs1 = -kInf, last0 = -kInf, last1 = -kInf;
  SignedLog signed_sum;
  double log_c = 0;       // log |C(alpha, i)|
  bool negative = false;  // C(alpha, i) < 0
  for (int i = 0; i < kMaxFractionalTerms; ++i) {
    const auto [t0, t1] = FractionalTerms(q, z, alpha, i, log_c);
    abs0 = LogAddExp(abs0, t0);
    abs1 = LogAddExp(abs1, t1);
    signed_sum.Add(negative, t0);
    signed_sum.Add(negative, t1);
    const double total = LogAddExp(abs0, abs1);
    if (t0 < last0 && t1 < last1 && std::max(t0, t1) < total - kNegligibleLog) {
      if (sum == FractionalSum::kAbsolute || signed_sum.negative ||
          signed_sum.log_mag == -kInf) {
        return total;
      }
      return signed_sum.log_mag;
    }
    last0 = t0;
    last1 = t1;
    log_c += std::log(std::fabs(alpha - i)) - std::log(i + 1.0);
    if (alpha - i < 0) negative = !negative;
  }
  return kInf;
}

// When the series has not converged (its terms fall only polynomially
// when q is large and z small or large): A_alpha is a moment
// E[(mu(x)/mu0(x))^alpha] of a likelihood ratio, so log A is convex in
// alpha, and the chord between the neighbouring integer orders bounds it
// from above (A_1 = 1).
double LogAChord(double q, double z, double alpha) {
  const double below = std::floor(alpha), t = alpha - below;
  const int64_t n = static_cast<int64_t>(below);
  return (1 - t) * LogAInteger(q, z, n) + t * LogAInteger(q, z, n + 1);
}

double SubsampledGaussianAt(double q, double z, double alpha,
                            FractionalSum sum) {
  if (!CheckSampledGaussian(q, z).ok() || std::isnan(alpha)) return kInf;
  if (q == 0 || z == kInf) return 0;
  if (z == 0 || alpha == kInf) return kInf;
  if (q == 1) return alpha / (2 * z * z);
  if (!(alpha > 1) || alpha > kMaxOrder) return kInf;
  double log_a = IsInteger(alpha)
                     ? LogAInteger(q, z, static_cast<int64_t>(alpha))
                     : LogAFractional(q, z, alpha, sum);
  if (log_a == kInf) log_a = LogAChord(q, z, alpha);
  // RDP is >= 0; a cancelling signed sum may round just below.
  return std::max(0.0, log_a / (alpha - 1));
}

// Zhu and Wang's Theorem 6 at an integer alpha >= 2, 0 < q < 1.
double ZhuWangBound(double q, int64_t alpha,
                    const std::function<double(int64_t)>& eps) {
  const double log_q = std::log(q), log_1mq = std::log1p(-q);
  const double a = static_cast<double>(alpha);
  std::vector<double> terms;
  terms.reserve(alpha);
  terms.push_back((a - 1) * log_1mq + std::log1p((a - 1) * q));
  double log_c = std::log(a * (a - 1) / 2);  // log C(alpha, 2)
  terms.push_back(log_c + 2 * log_q + (a - 2) * log_1mq + eps(2));
  for (int64_t l = 3; l <= alpha; ++l) {
    const double dl = static_cast<double>(l);
    log_c += std::log(a - dl + 1) - std::log(dl);
    terms.push_back(std::log(3.0) + log_c + dl * log_q + (a - dl) * log_1mq +
                    (dl - 1) * eps(l));
  }
  return std::min(LogSumExp(terms) / (a - 1), eps(alpha));
}

double PoissonSubsampledAt(double q, const std::function<double(int64_t)>& eps,
                           double alpha) {
  if (!(q >= 0 && q <= 1)) return kInf;
  if (q == 0) return 0;
  if (!IsInteger(alpha) || alpha > kMaxOrder) return kInf;
  if (q == 1) return eps(static_cast<int64_t>(alpha));
  if (alpha < 2) return kInf;
  return ZhuWangBound(q, static_cast<int64_t>(alpha), eps);
}

bool BadConversion(const std::vector<double>& orders,
                   const std::vector<double>& rdp, double delta) {
  return orders.size() != rdp.size() || !CheckDelta(delta).ok();
}

// The least of `eps_at(alpha, rdp)` over orders alpha > 1, clamped at 0.
template <typename EpsAt>
PrivacySpent LeastEpsilon(const std::vector<double>& orders,
                          const std::vector<double>& rdp, EpsAt eps_at) {
  PrivacySpent best{kInf, kNaN};
  for (size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i];
    if (!(a > 1) || a == kInf || std::isnan(rdp[i])) continue;
    const double eps = eps_at(a, rdp[i]);
    if (eps < best.epsilon) best = {eps, a};
  }
  best.epsilon = std::max(0.0, best.epsilon);
  return best;
}

double SpentAt(double q, int64_t steps, double delta, double z) {
  return SubsampledGaussianSpent(q, z, steps, delta).epsilon;
}

// The doubling: the least power of two times 1 (or 1e4) at which the target
// is reached, with the last z that missed it (0 when 1 already reaches it).
absl::StatusOr<std::pair<double, double>> NoiseBracket(double q, int64_t steps,
                                                       double delta,
                                                       double target) {
  constexpr double kMaxNoise = 1e4;
  double lo = 0, hi = 1;
  while (SpentAt(q, steps, delta, hi) > target) {
    if (hi >= kMaxNoise) {
      return absl::InvalidArgumentError(
          absl::StrCat("target epsilon ", target, " is not reached at delta ",
                       delta, " with q = ", q, " over ", steps,
                       " steps even at noise multiplier ", kMaxNoise));
    }
    lo = hi;
    hi = std::min(2 * hi, kMaxNoise);
  }
  return std::make_pair(lo, hi);
}

}  // namespace

std::vector<double> DefaultRdpOrders() {
  std::vector<double> orders;
  for (int k = 11; k <= 109; ++k) orders.push_back(k / 10.0);
  for (int a = 11; a <= 63; ++a) orders.push_back(a);
  for (double a : {128.0, 256.0, 512.0, 1024.0}) orders.push_back(a);
  return orders;
}

absl::Status CheckSampledGaussian(double q, double z) {
  if (!(q >= 0 && q <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling rate q = ", q, " is not in [0, 1]"));
  }
  if (!(z >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("noise multiplier z = ", z, " is not >= 0"));
  }
  return absl::OkStatus();
}

absl::Status CheckDelta(double delta) {
  if (!(delta > 0 && delta < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("delta = ", delta, " is not in (0, 1)"));
  }
  return absl::OkStatus();
}

std::vector<double> SubsampledGaussianRdp(double q, double z,
                                          const std::vector<double>& orders,
                                          FractionalSum sum) {
  std::vector<double> rdp;
  rdp.reserve(orders.size());
  for (double a : orders) rdp.push_back(SubsampledGaussianAt(q, z, a, sum));
  return rdp;
}

std::vector<double> DiscreteGaussianRdp(double sigma, double d2,
                                        const std::vector<double>& orders) {
  std::vector<double> rdp;
  rdp.reserve(orders.size());
  const bool ok = sigma > 0 && d2 >= 0;
  for (double a : orders) {
    rdp.push_back(ok && a > 0 ? a * d2 * d2 / (2 * sigma * sigma) : kInf);
  }
  return rdp;
}

std::vector<double> SkellamRdp(double mu, double d1, double d2,
                               const std::vector<double>& orders) {
  std::vector<double> rdp;
  rdp.reserve(orders.size());
  const bool ok = mu > 0 && d1 >= 0 && d2 >= 0;
  for (double a : orders) {
    if (!ok || !(a > 1)) {
      rdp.push_back(kInf);
      continue;
    }
    const double tail = std::min(
        ((2 * a - 1) * d2 * d2 + 6 * d1) / (4 * mu * mu), 3 * d1 / (2 * mu));
    rdp.push_back(a * d2 * d2 / (2 * mu) + tail);
  }
  return rdp;
}

std::vector<double> PoissonSubsampledRdp(
    double q, const std::function<double(int64_t alpha)>& unsampled_rdp,
    const std::vector<double>& orders) {
  std::vector<double> rdp;
  rdp.reserve(orders.size());
  for (double a : orders) {
    rdp.push_back(PoissonSubsampledAt(q, unsampled_rdp, a));
  }
  return rdp;
}

std::vector<double> PoissonSubsampledRdp(
    double q, const std::vector<double>& unsampled_rdp,
    const std::vector<double>& orders) {
  if (unsampled_rdp.size() != orders.size()) {
    return std::vector<double>(orders.size(), kInf);
  }
  // (order, least RDP at that order or above), ascending.
  std::vector<std::pair<double, double>> bound;
  for (size_t i = 0; i < orders.size(); ++i) {
    const double r = std::isnan(unsampled_rdp[i]) ? kInf : unsampled_rdp[i];
    bound.emplace_back(orders[i], r);
  }
  std::sort(bound.begin(), bound.end());
  for (size_t i = bound.size(); i-- > 1;) {
    bound[i - 1].second = std::min(bound[i - 1].second, bound[i].second);
  }
  const auto eps = [&bound](int64_t l) {
    const auto it =
        std::lower_bound(bound.begin(), bound.end(),
                         std::make_pair(static_cast<double>(l), -kInf));
    return it == bound.end() ? kInf : it->second;
  };
  return PoissonSubsampledRdp(q, eps, orders);
}

PrivacySpent EpsilonFromRdp(const std::vector<double>& orders,
                            const std::vector<double>& rdp, double delta) {
  if (BadConversion(orders, rdp, delta)) return {kInf, kNaN};
  const double log_delta = std::log(delta);
  return LeastEpsilon(orders, rdp, [log_delta](double a, double r) {
    return r + std::log1p(-1 / a) - (log_delta + std::log(a)) / (a - 1);
  });
}

PrivacySpent EpsilonFromRdpClassic(const std::vector<double>& orders,
                                   const std::vector<double>& rdp,
                                   double delta) {
  if (BadConversion(orders, rdp, delta)) return {kInf, kNaN};
  const double log_delta = std::log(delta);
  return LeastEpsilon(orders, rdp, [log_delta](double a, double r) {
    return r - log_delta / (a - 1);
  });
}

PrivacySpent SubsampledGaussianSpent(double q, double z, int64_t steps,
                                     double delta,
                                     const std::vector<double>& orders,
                                     FractionalSum sum) {
  RdpAccountant accountant(orders);
  accountant.Compose(SubsampledGaussianRdp(q, z, orders, sum), steps);
  return accountant.Spent(delta);
}

absl::StatusOr<double> NoiseForTarget(double q, int64_t steps, double delta,
                                      double target_epsilon) {
  // q alone: z is what is sought.
  if (absl::Status s = CheckSampledGaussian(q, 0); !s.ok()) return s;
  if (absl::Status s = CheckDelta(delta); !s.ok()) return s;
  if (steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps = ", steps, " is not >= 0"));
  }
  if (!(target_epsilon > 0) || target_epsilon == kInf) {
    return absl::InvalidArgumentError(absl::StrCat(
        "target epsilon = ", target_epsilon, " is not > 0 and finite"));
  }
  if (q == 0 || steps == 0) return 0.0;
  absl::StatusOr<std::pair<double, double>> bracket =
      NoiseBracket(q, steps, delta, target_epsilon);
  if (!bracket.ok()) return bracket.status();
  // Invariant: hi reaches the target, lo does not (epsilon falls as z
  // grows).
  auto [lo, hi] = *bracket;
  while (hi - lo > 1e-4 * hi) {
    const double mid = (lo + hi) / 2;
    if (SpentAt(q, steps, delta, mid) <= target_epsilon) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

RdpAccountant::RdpAccountant(std::vector<double> orders)
    : orders_(std::move(orders)), rdp_(orders_.size(), 0.0) {}

void RdpAccountant::Compose(const std::vector<double>& rdp_one_step,
                            int64_t steps) {
  if (rdp_one_step.size() != orders_.size() || steps < 0) {
    std::fill(rdp_.begin(), rdp_.end(), kInf);
    return;
  }
  if (steps == 0) return;
  for (size_t i = 0; i < rdp_.size(); ++i) {
    const double r = std::isnan(rdp_one_step[i]) ? kInf : rdp_one_step[i];
    rdp_[i] += static_cast<double>(steps) * r;
  }
}

PrivacySpent RdpAccountant::Spent(double delta) const {
  return EpsilonFromRdp(orders_, rdp_, delta);
}

}  // namespace shefl
