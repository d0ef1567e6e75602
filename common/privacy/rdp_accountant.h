// Rényi differential privacy (RDP) accounting: the RDP of one step of a
// mechanism at a list of orders alpha, composition over steps (RDP adds),
// and the conversion to (epsilon, delta)-DP.
//
// Mechanisms:
//  - the Poisson-subsampled Gaussian (sampling rate q, noise multiplier z:
//    std z * the L2 sensitivity), Mironov, Talwar and Zhang 2019, "Rényi
//    Differential Privacy of the Sampled Gaussian Mechanism": exact at
//    integer orders (the binomial expansion, in log space); at fractional
//    orders the two series of their section 3.3. Those series' terms carry
//    the signs of the generalised binomial coefficient C(alpha, i);
//    FractionalSum::kAbsolute adds every term's magnitude, an upper bound on
//    the signed sum, as Google's dp_accounting has done since 2024 (the
//    default, so a rounding in a cancelling sum can never lower the
//    figure); kSigned keeps the signs, as Opacus and the older TF Privacy
//    do (their published figures come from it). The two differ little when
//    q is small, but the absolute one is loose when q is large: at q = 0.5,
//    z = 10 it gives 0.19 at order 1.1 where the exact RDP at order 2 is
//    0.0025 (the minimum over orders then falls on the exact integer ones);
//  - the Skellam mechanism, Agarwal, Kairouz and Liu 2021, unsampled;
//  - the discrete Gaussian, Canonne, Kamath and Steinke 2020: its Rényi
//    divergence is bounded by the continuous Gaussian's (it is
//    rho-zCDP with rho = d2^2 / (2 sigma^2)), so its RDP is taken as the
//    Gaussian's, alpha d2^2 / (2 sigma^2);
//  - Poisson subsampling of any mechanism given its unsampled RDP, the
//    general upper bound of Zhu and Wang 2019, "Poisson Subsampled Rényi
//    Differential Privacy" (Theorem 6), at integer orders >= 2 only.
//
// An RDP of +infinity at an order means "no guarantee there": the order
// drops out of the minimum of the conversion. Functions that return RDP
// vectors cannot return an error, so invalid figures (q outside [0, 1],
// z < 0, NaN, mismatched sizes) give +infinity at every order: never a
// guarantee that was not earned. CheckSampledGaussian and CheckDelta give
// the refusal naming the figure, for callers holding a user's config.
//
// Thread-safety: free functions without state; RdpAccountant is a value
// type, thread-compatible.
#ifndef SHEFL_COMMON_PRIVACY_RDP_ACCOUNTANT_H_
#define SHEFL_COMMON_PRIVACY_RDP_ACCOUNTANT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shefl {

// 1.1, 1.2, ..., 10.9 (each k / 10.0, so no drift), 11, 12, ..., 63, 128,
// 256, 512, 1024: dp_accounting's default orders.
std::vector<double> DefaultRdpOrders();

// How the fractional-order series of the subsampled Gaussian are summed
// (see the file comment).
enum class FractionalSum { kAbsolute, kSigned };

// InvalidArgument naming the figure unless 0 <= q <= 1 and z >= 0 (z may be
// +infinity: no privacy cost).
absl::Status CheckSampledGaussian(double q, double z);
// InvalidArgument unless 0 < delta < 1.
absl::Status CheckDelta(double delta);

// One step's RDP of the Poisson-subsampled Gaussian at each order: 0 when
// q == 0 or z == +inf; alpha / (2 z^2) when q == 1; +inf when z == 0
// (q > 0), at alpha = +inf, at alpha <= 1 (q < 1), or above order 100000.
// A fractional series that has not converged in 10,000 terms (dp_accounting
// gives up at 1,000 and drops the order) is replaced by the chord of
// log A_alpha between the neighbouring integer orders, an upper bound
// (log A_alpha is convex in alpha).
std::vector<double> SubsampledGaussianRdp(
    double q, double z, const std::vector<double>& orders,
    FractionalSum sum = FractionalSum::kAbsolute);

// The discrete Gaussian of std sigma (integer units) on a sum of L2
// sensitivity d2: alpha d2^2 / (2 sigma^2); +inf unless sigma > 0 and
// d2 >= 0.
std::vector<double> DiscreteGaussianRdp(double sigma, double d2,
                                        const std::vector<double>& orders);

// The Skellam mechanism of total variance mu (integer units) on a sum of L1
// sensitivity d1 and L2 sensitivity d2, unsampled, at alpha > 1:
//   alpha d2^2 / (2 mu) + min(((2 alpha - 1) d2^2 + 6 d1) / (4 mu^2),
//                             3 d1 / (2 mu));
// +inf at alpha <= 1, or unless mu > 0, d1 >= 0, d2 >= 0.
std::vector<double> SkellamRdp(double mu, double d1, double d2,
                               const std::vector<double>& orders);

// Poisson subsampling at rate q of a mechanism whose unsampled RDP is
// `unsampled_rdp(l)` at the integer order l (Zhu and Wang's Theorem 6): at
// an integer alpha >= 2,
//   1/(alpha-1) log( (1-q)^(alpha-1) (alpha q - q + 1)
//                    + C(alpha,2) q^2 (1-q)^(alpha-2) e^eps(2)
//                    + 3 sum_{l=3..alpha} C(alpha,l) q^l (1-q)^(alpha-l)
//                                         e^((l-1) eps(l)) ),
// and never more than eps(alpha) itself (subsampling cannot cost privacy:
// exp((alpha-1) D_alpha) is jointly convex). 0 when q == 0; eps(alpha) when
// q == 1; +inf at other orders (non-integer, below 2, above 100000) and
// for q outside [0, 1].
std::vector<double> PoissonSubsampledRdp(
    double q, const std::function<double(int64_t alpha)>& unsampled_rdp,
    const std::vector<double>& orders);
// The same from the unsampled RDP at the orders themselves
// (unsampled_rdp[i] at orders[i]): eps(l) at an integer l that is not among
// them is bounded by the least value at an order >= l (RDP never falls as
// the order grows), +inf when there is none. +inf everywhere on a size
// mismatch.
std::vector<double> PoissonSubsampledRdp(
    double q, const std::vector<double>& unsampled_rdp,
    const std::vector<double>& orders);

// An (epsilon, delta) guarantee and the order that gave it. epsilon is +inf
// and order NaN when no order gives a finite epsilon (or on bad arguments:
// delta outside (0, 1), mismatched sizes).
struct PrivacySpent {
  double epsilon;
  double order;
};

// The improved conversion (Balle et al. 2020; Canonne, Kamath and Steinke
// 2020): the least over orders alpha > 1 of
//   rdp(alpha) + log1p(-1/alpha) - (log(delta) + log(alpha)) / (alpha - 1),
// clamped at 0; the first order attaining it on ties.
PrivacySpent EpsilonFromRdp(const std::vector<double>& orders,
                            const std::vector<double>& rdp, double delta);
// The classic conversion (Mironov 2017): the least over alpha > 1 of
// rdp(alpha) - log(delta) / (alpha - 1).
PrivacySpent EpsilonFromRdpClassic(const std::vector<double>& orders,
                                   const std::vector<double>& rdp,
                                   double delta);

// The subsampled Gaussian run `steps` times, converted (improved) at
// `orders`.
PrivacySpent SubsampledGaussianSpent(
    double q, double z, int64_t steps, double delta,
    const std::vector<double>& orders = DefaultRdpOrders(),
    FractionalSum sum = FractionalSum::kAbsolute);

// The least noise multiplier z (to 1e-4 relative; the z returned reaches
// the target) at which the subsampled Gaussian run `steps` times at rate q
// spends epsilon <= target_epsilon at delta, at DefaultRdpOrders(), summed
// kAbsolute. 0 when q == 0 or steps == 0 (nothing is spent). InvalidArgument
// on bad figures (q outside [0, 1], steps < 0, delta outside (0, 1),
// target_epsilon not > 0 and finite), and when even z = 1e4 spends more.
absl::StatusOr<double> NoiseForTarget(double q, int64_t steps, double delta,
                                      double target_epsilon);

// The run's accountant: the sum of every step's RDP, per order.
class RdpAccountant {
 public:
  // Orders are taken as given (they are meant to be > 1 and finite).
  explicit RdpAccountant(std::vector<double> orders = DefaultRdpOrders());

  // Adds `steps` times one step's RDP. Precondition: rdp_one_step is sized
  // as orders() and steps >= 0; otherwise every order becomes +inf (the
  // accountant claims nothing rather than too little). NaN counts +inf.
  void Compose(const std::vector<double>& rdp_one_step, int64_t steps = 1);

  // The improved conversion of the sum (EpsilonFromRdp).
  PrivacySpent Spent(double delta) const;

  const std::vector<double>& rdp() const { return rdp_; }
  const std::vector<double>& orders() const { return orders_; }

  // Exact round trip for the checkpoint: text lines, a header, the count,
  // each order and its RDP as the 16 hex digits of the double's bits, and
  // an FNV-1a 64 checksum of all that precedes it.
  std::string Save() const;
  // Refuses (InvalidArgument naming what is wrong: the header, the count,
  // a line, the checksum, a NaN order, a NaN or negative RDP) anything Save
  // did not write.
  static absl::StatusOr<RdpAccountant> Load(const std::string& bytes);

 private:
  std::vector<double> orders_;
  std::vector<double> rdp_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_PRIVACY_RDP_ACCOUNTANT_H_
