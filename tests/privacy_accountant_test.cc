// The RDP accountant (common/privacy/rdp_accountant.h) against published
// figures: the epsilons and RDP vectors printed by TF Privacy's, Google's
// dp_accounting's and Opacus's own tests for the Poisson-subsampled
// Gaussian, each computed with that library's orders, conversion (classic
// or improved) and fractional sum (signed or absolute), to the precision
// it printed. Then what has no published figure, by hand or by its
// properties: the Skellam and discrete Gaussian RDP, Zhu and Wang's
// general subsampling bound against the exact subsampled Gaussian, the
// edges (q = 0, q = 1, z = 0, bad figures), epsilon's monotonicity, the
// noise search's round trip, and the checkpoint's exact round trip and its
// refusals. Distributed DP's round (common/privacy/round_rdp.h): the
// Skellam bound it charges by hand, never below the Gaussian limit, and
// its noise search's round trip.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common/privacy/rdp_accountant.h"
#include "common/privacy/round_rdp.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<double> IntegerOrders(int from, int to) {
  std::vector<double> orders;
  for (int a = from; a <= to; ++a) orders.push_back(a);
  return orders;
}

// TF Privacy's compute_dp_sgd_privacy orders.
std::vector<double> TfDpSgdOrders() {
  std::vector<double> orders{1.25, 1.5, 1.75, 2, 2.25, 2.5, 3, 3.5, 4, 4.5};
  for (int a = 5; a < 64; ++a) orders.push_back(a);
  for (double a : {128.0, 256.0, 512.0}) orders.push_back(a);
  return orders;
}

// Opacus's RDPAccountant.DEFAULT_ALPHAS, built as it builds them.
std::vector<double> OpacusOrders() {
  std::vector<double> orders;
  for (int x = 1; x < 100; ++x) orders.push_back(1 + x / 10.0);
  for (int a = 12; a < 64; ++a) orders.push_back(a);
  return orders;
}

std::vector<double> Times(std::vector<double> rdp, double steps) {
  for (double& r : rdp) r *= steps;
  return rdp;
}

std::vector<double> Plus(std::vector<double> a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// A subsampled Gaussian run `steps` times, at `orders`.
std::vector<double> Run(double q, double z, double steps,
                        const std::vector<double>& orders,
                        FractionalSum sum = FractionalSum::kAbsolute) {
  return Times(SubsampledGaussianRdp(q, z, orders, sum), steps);
}

TEST_CASE("the default orders are 1.1 to 10.9 by tenths then 11 to 63 then 128 to 1024") {
  const std::vector<double> orders = DefaultRdpOrders();
  REQUIRE(orders.size() == 99u + 53u + 4u);
  CHECK(orders[0] == 1.1);
  CHECK(orders[9] == 2.0);  // k / 10.0 lands on the integers exactly
  CHECK(orders[98] == 10.9);
  CHECK(orders[99] == 11.0);
  CHECK(orders[151] == 63.0);
  CHECK(orders[152] == 128.0);
  CHECK(orders.back() == 1024.0);
}

TEST_CASE("TF Privacy's rdp_accountant test gives epsilon 1.258575 at order 20 by the classic conversion") {
  // TF Privacy rdp_accountant_test.py, test_get_privacy_spent (2018):
  // compute_rdp(0.01, 4, 10000, range(2, 33)), target_delta 1e-5.
  const std::vector<double> orders = IntegerOrders(2, 32);
  const PrivacySpent s =
      EpsilonFromRdpClassic(orders, Run(0.01, 4, 10000, orders), 1e-5);
  CHECK(s.epsilon == Approx(1.258575).margin(5e-7));
  CHECK(s.order == 20);
}

TEST_CASE("TF Privacy's composition test gives epsilon 3.276237 at order 8 by the classic conversion") {
  // TF Privacy rdp_accountant_test.py, test_compute_privacy_loss (2018):
  // (q 0.01, z 4, 10000 steps) then (q 0.1, z 2, 100 steps), delta 1e-5.
  // It printed 3.276237 by cutting digits (the sum is 3.2762379) and
  // checks 5 places, as does this.
  const std::vector<double> orders{1.25, 1.5, 1.75, 2,  2.5, 3,  4,
                                   5,    6,   7,    8,  10,  12, 14,
                                   16,   20,  24,   28, 32,  64, 256};
  for (FractionalSum sum : {FractionalSum::kSigned, FractionalSum::kAbsolute}) {
    const std::vector<double> rdp =
        Plus(Run(0.01, 4, 10000, orders, sum), Run(0.1, 2, 100, orders, sum));
    const PrivacySpent s = EpsilonFromRdpClassic(orders, rdp, 1e-5);
    CHECK(s.epsilon == Approx(3.276237).margin(5e-6));
    CHECK(s.order == 8);
  }
}

TEST_CASE("Opacus's RDP accountant test gives epsilon 7.32911117143 with the signed sum") {
  // Opacus accountants_test.py, test_rdp_accountant: sample_rate 0.04,
  // noise_multiplier 1.5, int(90 / 0.04) = 2250 steps, delta 1e-5, its
  // default orders, the improved conversion, signed fractional sums.
  const std::vector<double> orders = OpacusOrders();
  const PrivacySpent s = EpsilonFromRdp(
      orders, Run(0.04, 1.5, 2250, orders, FractionalSum::kSigned), 1e-5);
  CHECK(s.epsilon == Approx(7.32911117143).epsilon(1e-10));
  CHECK(s.order == Approx(3.9));
  // Its optimum is a fractional order, where the absolute sum is the
  // larger (upper) bound.
  const PrivacySpent upper =
      EpsilonFromRdp(orders, Run(0.04, 1.5, 2250, orders), 1e-5);
  CHECK(upper.epsilon > s.epsilon);
  CHECK(upper.epsilon == Approx(s.epsilon).epsilon(1e-4));
}

TEST_CASE("TF Privacy's compute_dp_sgd_privacy test gives its three epsilons and orders") {
  // compute_dp_sgd_privacy_test.py, test_compute_dp_sgd_privacy: q = batch /
  // n, steps = ceil(epochs * n / batch), dp_accounting's RdpAccountant
  // (improved conversion, absolute sums) at TfDpSgdOrders.
  struct Case {
    double n, batch, z, epochs, delta, epsilon, order;
  };
  const Case cases[] = {
      {60000, 150, 1.3, 15, 1e-5, 0.7242234026109595, 19},
      {100000, 100, 1.0, 30, 1e-7, 1.4154988495444842, 13},
      {100000000, 1024, 0.1, 10, 1e-7, 5907982.3113978775, 1.25},
  };
  const std::vector<double> orders = TfDpSgdOrders();
  for (const Case& c : cases) {
    const double steps = std::ceil(c.epochs * c.n / c.batch);
    const PrivacySpent s =
        EpsilonFromRdp(orders, Run(c.batch / c.n, c.z, steps, orders), c.delta);
    CHECK(s.epsilon == Approx(c.epsilon).epsilon(1e-9));
    CHECK(s.order == c.order);
  }
}

TEST_CASE("TF Privacy's compute_noise test figures are the classic conversion's epsilons") {
  // compute_noise_from_budget_test.py: compute_noise(n, batch, target,
  // epochs, delta) returned the noise 1.3, 1.0, 0.1 for the targets below,
  // printed when the conversion was the classic one; the signed sum of
  // that time, and the absolute one, both give them.
  struct Case {
    double n, batch, epsilon, epochs, delta, z;
  };
  const Case cases[] = {
      {60000, 150, 0.941870567, 15, 1e-5, 1.3},
      {100000, 100, 1.70928734, 30, 1e-7, 1.0},
      {100000000, 1024, 5907984.81339406, 10, 1e-7, 0.1},
  };
  const std::vector<double> orders = TfDpSgdOrders();
  for (const Case& c : cases) {
    const double steps = std::ceil(c.epochs * c.n / c.batch);
    for (FractionalSum sum :
         {FractionalSum::kSigned, FractionalSum::kAbsolute}) {
      const PrivacySpent s = EpsilonFromRdpClassic(
          orders, Run(c.batch / c.n, c.z, steps, orders, sum), c.delta);
      CHECK(s.epsilon == Approx(c.epsilon).epsilon(1e-8));
    }
  }
}

TEST_CASE("TF Privacy's example privacy test gives its epsilons with dp_accounting's absolute sum") {
  // compute_dp_sgd_privacy_test.py, test_compute_dp_sgd_example_privacy
  // (RDP rows): 1.2 epochs, noise 0.7 (0.35 with microbatching), delta
  // 1e-5, dp_accounting's default orders; without sampling ceil(1.2) = 2
  // Gaussian steps, with Poisson sampling at 0.01 ceil(1.2 / 0.01) = 120.
  // Checked to 7 places, as there.
  const std::vector<double> orders = DefaultRdpOrders();
  CHECK(EpsilonFromRdp(orders, Run(1, 0.7, 2, orders), 1e-5).epsilon ==
        Approx(10.8602036).margin(5e-8));
  CHECK(EpsilonFromRdp(orders, Run(1, 0.35, 2, orders), 1e-5).epsilon ==
        Approx(26.2880374).margin(5e-8));
  const double steps = std::ceil(1.2 / 0.01);
  REQUIRE(steps == 120);
  CHECK(EpsilonFromRdp(orders, Run(0.01, 0.7, steps, orders), 1e-5).epsilon ==
        Approx(3.2392676).margin(5e-8));
  CHECK(EpsilonFromRdp(orders, Run(0.01, 0.35, steps, orders), 1e-5).epsilon ==
        Approx(22.6248601).margin(5e-8));
  // The signed sums are lower here (their optima are fractional orders):
  // these figures were printed from the absolute ones.
  const auto signed_eps = [&orders, steps](double z) {
    return EpsilonFromRdp(orders,
                          Run(0.01, z, steps, orders, FractionalSum::kSigned),
                          1e-5)
        .epsilon;
  };
  CHECK(signed_eps(0.7) < 3.2392676 - 1e-5);
  CHECK(signed_eps(0.35) < 22.6248601 - 1e-2);
}

TEST_CASE("the subsampled Gaussian's RDP vectors match dp_accounting's and the old TF Privacy's") {
  // q 0.01, z 2.5, 50 steps at orders 1.5, 2.5, 5, 50, 100, inf.
  // dp_accounting rdp_privacy_accountant_test.py,
  // test_compute_rdp_poisson_sampled_gaussian (absolute sums, 9 digits):
  const std::vector<double> orders{1.5, 2.5, 5, 50, 100, kInf};
  const std::vector<double> dp_accounting{6.70579741e-04, 1.08548710e-03,
                                          2.18075656e-03, 2.38460375e-02,
                                          1.67416308e02};
  const std::vector<double> absolute = Run(0.01, 2.5, 50, orders);
  for (size_t i = 0; i < dp_accounting.size(); ++i) {
    CHECK(absolute[i] == Approx(dp_accounting[i]).epsilon(1e-8));
  }
  CHECK(absolute[5] == kInf);
  // TF Privacy rdp_accountant_test.py, test_compute_rdp_sequence (signed
  // sums, checked to 5 places there and here):
  const std::vector<double> tf{0.00065, 0.001085, 0.00218075, 0.023846,
                               167.416307};
  const std::vector<double> with_signs =
      Run(0.01, 2.5, 50, orders, FractionalSum::kSigned);
  for (size_t i = 0; i < tf.size(); ++i) {
    CHECK(with_signs[i] == Approx(tf[i]).margin(5e-6));
  }
  // TF Privacy test_compute_rdp_scalar: compute_rdp(0.1, 2, 10, 5).
  CHECK(Run(0.1, 2, 10, {5})[0] == Approx(0.07737).margin(5e-6));
}

TEST_CASE("Opacus's documented example gives epsilon 0.336 at order 23") {
  // opacus/accountants/analysis/rdp.py's module docstring: (1e-5, 1.0, 10)
  // then (1e-4, 3.0, 4) at orders 2..32, delta 1e-5 (3 digits printed).
  const std::vector<double> orders = IntegerOrders(2, 32);
  const std::vector<double> rdp =
      Plus(Run(1e-5, 1.0, 10, orders), Run(1e-4, 3.0, 4, orders));
  const PrivacySpent s = EpsilonFromRdp(orders, rdp, 1e-5);
  CHECK(s.epsilon == Approx(0.336).margin(5e-4));
  CHECK(s.order == 23);
}

TEST_CASE("the conversions match dp_accounting's pure DP and Gaussian figures") {
  // rdp_privacy_accountant_test.py, test_compute_epsilon_delta_pure_dp: a
  // constant RDP of 1.1 at orders 2..32, delta 1e-5.
  const PrivacySpent pure =
      EpsilonFromRdp(IntegerOrders(2, 32), std::vector<double>(31, 1.1), 1e-5);
  CHECK(pure.epsilon == Approx(1.32783806176).epsilon(1e-10));
  CHECK(pure.order == 32);
  // test_compute_epsilon_delta_gaussian: z 4.530877117 unsampled is
  // exactly (1, 1e-6)-DP, at orders 1.000, 1.001, ..., 99.999.
  std::vector<double> fine;
  for (int i = 1000; i < 100000; ++i) fine.push_back(0.001 * i);
  const PrivacySpent gauss =
      EpsilonFromRdp(fine, SubsampledGaussianRdp(1, 4.530877117, fine), 1e-6);
  CHECK(gauss.epsilon == Approx(1).margin(5e-8));
  // The classic conversion is rdp - log(delta) / (alpha - 1), by hand.
  const PrivacySpent classic = EpsilonFromRdpClassic({2, 3}, {0.5, 1.0}, 1e-3);
  CHECK(classic.epsilon == Approx(1.0 + std::log(1e3) / 2));
  CHECK(classic.order == 3);
}

TEST_CASE("the conversions refuse bad figures by claiming nothing and clamp at zero") {
  const std::vector<double> orders{2, 3};
  for (double delta : {0.0, 1.0, -1e-5, std::nan("")}) {
    const PrivacySpent s = EpsilonFromRdp(orders, {0.1, 0.2}, delta);
    CHECK(s.epsilon == kInf);
    CHECK(std::isnan(s.order));
  }
  CHECK(EpsilonFromRdp(orders, {0.1}, 1e-5).epsilon == kInf);
  CHECK(EpsilonFromRdpClassic(orders, {0.1}, 1e-5).epsilon == kInf);
  // Orders <= 1 drop out, and so does +inf RDP.
  const PrivacySpent s = EpsilonFromRdp({1, 2, 3}, {0, kInf, 0.5}, 0.5);
  CHECK(s.order == 3);
  // Nothing spent: the formula goes negative, the guarantee is 0.
  CHECK(EpsilonFromRdp({2, 3}, {0, 0}, 0.5).epsilon == 0);
}

TEST_CASE("at the subsampled Gaussian's edges q 0 costs nothing, q 1 is the plain Gaussian and z 0 is no privacy") {
  const std::vector<double> orders = DefaultRdpOrders();
  for (double r : SubsampledGaussianRdp(0, 1, orders)) CHECK(r == 0);
  for (double r : SubsampledGaussianRdp(0, 0, orders)) CHECK(r == 0);
  for (double r : SubsampledGaussianRdp(0.1, 0, orders)) CHECK(r == kInf);
  const std::vector<double> plain = SubsampledGaussianRdp(1, 2, orders);
  for (size_t i = 0; i < orders.size(); ++i) {
    CHECK(plain[i] == orders[i] / 8);
  }
  // Bad figures claim nothing.
  for (double r : SubsampledGaussianRdp(1.5, 1, {2, 2.5})) CHECK(r == kInf);
  for (double r : SubsampledGaussianRdp(0.1, -1, {2, 2.5})) CHECK(r == kInf);
  CHECK(SubsampledGaussianRdp(0.1, 1, {kInf, 1.0})[0] == kInf);
  CHECK(SubsampledGaussianRdp(0.1, 1, {kInf, 1.0})[1] == kInf);
  CHECK_THAT(std::string(CheckSampledGaussian(1.5, 1).message()),
             Catch::Contains("sampling rate q = 1.5"));
  CHECK_THAT(std::string(CheckSampledGaussian(0.5, -1).message()),
             Catch::Contains("noise multiplier z = -1"));
  CHECK_THAT(std::string(CheckDelta(1).message()),
             Catch::Contains("delta = 1"));
  CHECK(CheckSampledGaussian(0, 0).ok());
  CHECK(CheckDelta(1e-9).ok());
}

TEST_CASE("the absolute sum bounds the signed one at fractional orders and equals it at integers") {
  const std::vector<double> orders = DefaultRdpOrders();
  for (double q : {1e-4, 0.01, 0.3}) {
    for (double z : {0.5, 1.0, 4.0}) {
      const std::vector<double> abs = SubsampledGaussianRdp(q, z, orders);
      const std::vector<double> sgn =
          SubsampledGaussianRdp(q, z, orders, FractionalSum::kSigned);
      for (size_t i = 0; i < orders.size(); ++i) {
        if (orders[i] == std::floor(orders[i])) {
          CHECK(abs[i] == sgn[i]);
        } else {
          CHECK(abs[i] >= sgn[i] * (1 - 1e-12));
        }
      }
    }
  }
}

TEST_CASE("the discrete Gaussian's RDP is the Gaussian's") {
  const std::vector<double> orders{1.5, 2, 32};
  const std::vector<double> dg = DiscreteGaussianRdp(30, 6, orders);
  const std::vector<double> g = SubsampledGaussianRdp(1, 5, orders);
  for (size_t i = 0; i < orders.size(); ++i) CHECK(dg[i] == Approx(g[i]));
  CHECK(DiscreteGaussianRdp(0, 1, {2})[0] == kInf);
}

TEST_CASE("the Skellam RDP is the formula by hand at two orders and both branches of its min") {
  // mu 1000, d1 5, d2 2: the first branch, ((2a - 1) 4 + 30) / 4e6.
  const std::vector<double> wide = SkellamRdp(1000, 5, 2, {2, 32.5});
  CHECK(wide[0] == Approx(2 * 4 / 2000.0 + (3 * 4 + 30) / 4e6));  // 0.0040105
  CHECK(wide[1] == Approx(32.5 * 4 / 2000.0 + (64 * 4 + 30) / 4e6));
  // mu 2, d1 1, d2 1: at order 3 the first branch (11 / 16 < 3 / 4), at
  // order 10 the second (3 d1 / (2 mu) = 0.75 < 25 / 16).
  const std::vector<double> narrow = SkellamRdp(2, 1, 1, {3, 10});
  CHECK(narrow[0] == Approx(0.75 + 11 / 16.0));
  CHECK(narrow[1] == Approx(2.5 + 0.75));
  for (double r : SkellamRdp(0, 1, 1, {2})) CHECK(r == kInf);
  CHECK(SkellamRdp(10, 1, 1, {1})[0] == kInf);
}

TEST_CASE("Zhu and Wang's bound on the Gaussian is at least the exact RDP and exact at order 2") {
  const double q = 0.01, z = 1;
  const std::vector<double> orders = IntegerOrders(2, 63);
  const auto gaussian = [z](int64_t a) { return a / (2 * z * z); };
  const std::vector<double> bound = PoissonSubsampledRdp(q, gaussian, orders);
  const std::vector<double> exact = SubsampledGaussianRdp(q, z, orders);
  for (size_t i = 0; i < orders.size(); ++i) {
    CHECK(bound[i] >= exact[i] * (1 - 1e-12));
    // Their factor 3 on the l >= 3 terms costs at most log(3) / (alpha - 1)
    // over the exact figure, and it is never above the unsampled RDP.
    CHECK(bound[i] <= exact[i] + std::log(3.0) / (orders[i] - 1) + 1e-12);
    CHECK(bound[i] <= orders[i] / 2);
  }
  // At order 2 the l >= 3 sum is empty: exact.
  CHECK(bound[0] == Approx(exact[0]).epsilon(1e-12));
  CHECK(bound[30] > exact[30] + 1e-3);
  // q = 1 is the unsampled mechanism, q = 0 costs nothing, fractional and
  // low orders drop out.
  const std::vector<double> unsampled =
      PoissonSubsampledRdp(1, gaussian, orders);
  for (size_t i = 0; i < orders.size(); ++i) {
    CHECK(unsampled[i] == orders[i] / 2);
  }
  for (double r : PoissonSubsampledRdp(0, gaussian, {2, 2.5})) CHECK(r == 0);
  CHECK(PoissonSubsampledRdp(q, gaussian, {2.5})[0] == kInf);
  CHECK(PoissonSubsampledRdp(q, gaussian, {1})[0] == kInf);
  CHECK(PoissonSubsampledRdp(1.5, gaussian, {2})[0] == kInf);
}

TEST_CASE("Zhu and Wang's bound from an RDP vector bounds a missing order by the next one up") {
  const double q = 0.05;
  const auto gaussian = [](int64_t a) { return a / 2.0; };
  const std::vector<double> all = IntegerOrders(2, 8);
  const std::vector<double> from_vector =
      PoissonSubsampledRdp(q, SubsampledGaussianRdp(1, 1, all), all);
  const std::vector<double> from_callable =
      PoissonSubsampledRdp(q, gaussian, all);
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(from_vector[i] == Approx(from_callable[i]).epsilon(1e-14));
  }
  // Without order 3, eps(3) is taken as eps(4): a larger bound at 4.
  const std::vector<double> gappy{2, 4};
  const std::vector<double> bound =
      PoissonSubsampledRdp(q, SubsampledGaussianRdp(1, 1, gappy), gappy);
  CHECK(bound[0] == Approx(from_callable[0]).epsilon(1e-14));
  CHECK(bound[1] > from_callable[2]);
  CHECK(PoissonSubsampledRdp(q, std::vector<double>{1.0}, gappy)[0] == kInf);
}

TEST_CASE("epsilon falls as the noise grows and rises with the steps") {
  double last = kInf;
  for (double z = 0.5; z < 8; z *= 1.1) {
    const double eps = SubsampledGaussianSpent(0.01, z, 1000, 1e-5).epsilon;
    CHECK(eps < last);
    last = eps;
  }
  last = 0;
  for (int64_t steps = 1; steps < 100000; steps *= 3) {
    const double eps = SubsampledGaussianSpent(0.01, 1.1, steps, 1e-5).epsilon;
    CHECK(eps > last);
    last = eps;
  }
}

TEST_CASE("the noise search returns a multiplier that reaches the target while one a percent lower does not") {
  const double q = 0.01, delta = 1e-5, target = 1.0;
  const int64_t steps = 10000;
  const absl::StatusOr<double> z = NoiseForTarget(q, steps, delta, target);
  REQUIRE(z.ok());
  CHECK(SubsampledGaussianSpent(q, *z, steps, delta).epsilon <= target);
  CHECK(SubsampledGaussianSpent(q, *z * 0.99, steps, delta).epsilon > target);
  CHECK(SubsampledGaussianSpent(q, *z * (1 - 2e-4), steps, delta).epsilon >
        target);
  // Opacus's accountants_test (get_noise_multiplier: q 0.04, 90 epochs,
  // epsilon 8, delta 1e-5) prints 1.416 from a bisection that stops 0.01
  // wide, at its own orders: the least z here is within that.
  const absl::StatusOr<double> opacus = NoiseForTarget(0.04, 2250, 1e-5, 8);
  REQUIRE(opacus.ok());
  CHECK(*opacus == Approx(1.416).margin(0.01));
}

TEST_CASE("the noise search refuses bad figures and unreachable targets") {
  CHECK_THAT(std::string(NoiseForTarget(1.5, 10, 1e-5, 1).status().message()),
             Catch::Contains("sampling rate q = 1.5"));
  CHECK_THAT(std::string(NoiseForTarget(0.1, 10, 0, 1).status().message()),
             Catch::Contains("delta = 0"));
  CHECK_THAT(std::string(NoiseForTarget(0.1, -1, 1e-5, 1).status().message()),
             Catch::Contains("steps = -1"));
  CHECK_THAT(std::string(NoiseForTarget(0.1, 10, 1e-5, 0).status().message()),
             Catch::Contains("target epsilon = 0"));
  CHECK_THAT(
      std::string(NoiseForTarget(1, 1000, 1e-5, 1e-6).status().message()),
      Catch::Contains("even at noise multiplier 10000"));
  CHECK(*NoiseForTarget(0, 10, 1e-5, 1) == 0);
  CHECK(*NoiseForTarget(0.1, 0, 1e-5, 1) == 0);
}

TEST_CASE("the accountant adds every step's RDP and converts the sum") {
  RdpAccountant accountant;
  REQUIRE(accountant.orders() == DefaultRdpOrders());
  const std::vector<double> one =
      SubsampledGaussianRdp(0.02, 1.2, accountant.orders());
  accountant.Compose(one, 300);
  accountant.Compose(one);
  accountant.Compose(SkellamRdp(1e6, 10, 3, accountant.orders()), 2);
  for (size_t i = 0; i < one.size(); ++i) {
    const double skellam = SkellamRdp(1e6, 10, 3, {accountant.orders()[i]})[0];
    CHECK(accountant.rdp()[i] == Approx(301 * one[i] + 2 * skellam));
  }
  const PrivacySpent s = accountant.Spent(1e-5);
  const PrivacySpent direct =
      EpsilonFromRdp(accountant.orders(), accountant.rdp(), 1e-5);
  CHECK(s.epsilon == direct.epsilon);
  CHECK(s.order == direct.order);
  // A wrongly sized step claims nothing from then on.
  accountant.Compose({0.1, 0.2});
  for (double r : accountant.rdp()) CHECK(r == kInf);
  CHECK(accountant.Spent(1e-5).epsilon == kInf);
}

uint64_t Fnv1a64(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// `body` (a checkpoint without its last line) with a matching checksum.
std::string Signed(const std::string& body) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(Fnv1a64(body)));
  return body + "fnv1a64 " + hex + "\n";
}

std::string WithoutChecksum(const std::string& saved) {
  return saved.substr(0, saved.rfind("fnv1a64 "));
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() &&
         std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0;
}

TEST_CASE("the accountant's checkpoint reads back bit for bit") {
  RdpAccountant accountant({1.1, 2, 10.9, 1024});
  accountant.Compose({1.0 / 3, 0.1 + 0.2, 1e-300, kInf}, 7);
  const absl::StatusOr<RdpAccountant> back =
      RdpAccountant::Load(accountant.Save());
  REQUIRE(back.ok());
  CHECK(SameBits(back->orders(), accountant.orders()));
  CHECK(SameBits(back->rdp(), accountant.rdp()));
  CHECK(back->Save() == accountant.Save());
  const absl::StatusOr<RdpAccountant> fresh =
      RdpAccountant::Load(RdpAccountant().Save());
  REQUIRE(fresh.ok());
  CHECK(fresh->orders() == DefaultRdpOrders());
}

TEST_CASE("a corrupted or foreign checkpoint is refused, naming what is wrong") {
  RdpAccountant accountant({2, 3});
  accountant.Compose({0.5, 0.75}, 3);
  const std::string saved = accountant.Save();
  const auto error = [](const std::string& bytes) {
    return std::string(RdpAccountant::Load(bytes).status().message());
  };
  std::string flipped = saved;
  flipped[flipped.find("orders 2\n") + 10] ^= 1;  // a bit of the first order
  CHECK_THAT(error(flipped), Catch::Contains("checksum"));
  CHECK_THAT(error(saved.substr(0, saved.size() - 5)),
             Catch::Contains("no final newline"));
  CHECK_THAT(error(""), Catch::Contains("empty"));
  const std::string body = WithoutChecksum(saved);
  std::string header = body;
  header.replace(0, 22, "shefl-rdp-accountant 9");
  CHECK_THAT(error(Signed(header)), Catch::Contains("the first line is"));
  std::string count = body;
  count.replace(count.find("orders 2"), 8, "orders 3");
  CHECK_THAT(error(Signed(count)), Catch::Contains("says 3 orders but 2"));
  std::string word = body;
  word.replace(word.find("orders 2\n") + 9, 1, "X");
  CHECK_THAT(error(Signed(word)), Catch::Contains("order line 0"));
  // A negative RDP (the sign bit set) is no RDP.
  std::string negative = body;
  negative.replace(negative.rfind(' ') + 1, 1, "b");
  CHECK_THAT(error(Signed(negative)), Catch::Contains("the RDP at order 1"));
  CHECK(RdpAccountant::Load(Signed(body)).ok());
}

TEST_CASE("distributed DP charges the Skellam bound at B = S 2^f, subsampled by Zhu and Wang") {
  ExperimentConfig c;
  c.privacy.mode = "distributed";
  c.privacy.clip = 0.5;
  c.secure.scale_bits = 20;
  const double b = 0.5 * 1048576, z = 1.2;
  CHECK(DistributedUnit(c) == b);
  const std::vector<double> orders = DefaultRdpOrders();
  // q = 1: alpha / (2 z^2) + min((2 alpha + 5) / (4 z^4 B^2), 3 / (2 z^2)).
  const std::vector<double> full = DistributedSkellamRdp(1.0, z, b, orders);
  for (size_t i = 0; i < orders.size(); ++i) {
    const double a = orders[i];
    const double hand = a / (2 * z * z) +
                        std::min((2 * a + 5) / (4 * std::pow(z, 4) * b * b),
                                 3 / (2 * z * z));
    INFO("order " << a);
    CHECK(full[i] == Approx(hand).epsilon(1e-12));
  }
  // Subsampled: finite at integer orders only, at or above the exact
  // subsampled Gaussian's (the Skellam adds to it; Zhu and Wang bound it).
  const std::vector<double> sampled = DistributedSkellamRdp(0.1, z, b, orders);
  const std::vector<double> gaussian = SubsampledGaussianRdp(0.1, z, orders);
  for (size_t i = 0; i < orders.size(); ++i) {
    INFO("order " << orders[i]);
    if (orders[i] != std::floor(orders[i])) {
      CHECK(sampled[i] == kInf);
    } else {
      CHECK(sampled[i] >= gaussian[i] * (1 - 1e-12));
      CHECK(sampled[i] <= full[i]);
    }
  }
  CHECK(RoundRdp(c, z, 0.1) == sampled);
  c.privacy.mode = "central";
  CHECK(RoundRdp(c, z, 0.1) == gaussian);
}

TEST_CASE("distributed DP's noise search reaches its target and no less noise does") {
  ExperimentConfig c;
  c.privacy.mode = "distributed";
  const double delta = std::pow(1000.0, -1.1);
  auto z = RoundNoiseForTarget(c, 0.1, 50, delta, 8);
  REQUIRE(z.ok());
  CHECK(RoundSpent(c, *z, 0.1, 50, delta).epsilon <= 8);
  CHECK(RoundSpent(c, *z * (1 - 2e-4), 0.1, 50, delta).epsilon > 8);
  // Zhu and Wang's general bound costs more than the exact Gaussian's.
  c.privacy.mode = "central";
  auto central = RoundNoiseForTarget(c, 0.1, 50, delta, 8);
  REQUIRE(central.ok());
  CHECK(*z > *central);
  c.privacy.mode = "distributed";
  CHECK(RoundNoiseForTarget(c, 0.0, 50, delta, 8).value() == 0);
  CHECK_FALSE(RoundNoiseForTarget(c, 0.1, 50, delta, -1).ok());
  CHECK_FALSE(RoundNoiseForTarget(c, 0.1, 50, 2.0, 8).ok());
}

}  // namespace
}  // namespace shefl
