// Distributed differential privacy's arithmetic at a party
// (common/secure/party_noise.h, the L2 clip of common/secure/secure_input.h)
// and at the coordinator's honest-range check (common/secure/honest_range.h):
//  - the uniform stream and the Skellam draws are the Python party's bit for
//    bit (the same vectors pin python/tests/test_party_noise.py);
//  - Poisson draws have the mean and variance of Poisson(lambda) from
//    lambda 3.5 (Knuth) to 5e13 (PTRS), and log p(k) holds its precision
//    where -lambda + k log lambda - log k! loses it;
//  - t parties' noises sum to the target variance; a party's noise is
//    added mod 2^32 and keyed by (seed, round, model, party), fresh when
//    the seed is 0; bad variances are refused and leave q alone;
//  - a client's words on C_t stay within its L2 clip, and the residual
//    keeps what the clip took off;
//  - the honest range widens by the noise's tail, and a sum whose norm
//    passes what the clients and the noise can make is singled out;
//  - a party's own floor (--dp-min-multiplier) refuses a session whose noise
//    is too small for its clients' clips, or that gives a client no clip.
#include "common/secure/party_noise.h"

#include <cmath>
#include <random>
#include <vector>

#include "common/secure/honest_range.h"
#include "common/secure/secure_input.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

Key32 TestKey() {
  auto k = PartyNoiseKey(9, 3, 1, 4);
  REQUIRE(k.ok());
  return *k;
}

std::vector<int64_t> Skellams(double mu, size_t n, uint64_t* drawn) {
  UniformStream u(TestKey());
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(SampleSkellam(mu, u));
  *drawn = u.drawn();
  return out;
}

TEST_CASE("the noise stream and its draws are the Python party's bit for bit") {
  const Key32 key = TestKey();
  std::string hex;
  for (uint8_t b : key) hex += "0123456789abcdef"[b >> 4], hex += "0123456789abcdef"[b & 15];
  CHECK(hex == "6c317bec38af09e5ec0d0c0d4697400d5af8a46d82e3c1d213f19b39a0107705");
  UniformStream u(key);
  CHECK(u.Next() == 0.9823439218105547);
  CHECK(u.Next() == 0.7390087355045063);
  CHECK(u.Next() == 0.17812067974477774);
  uint64_t drawn = 0;
  CHECK(Skellams(7, 6, &drawn) == std::vector<int64_t>{3, 5, -2, 0, 1, 0});
  CHECK(drawn == 51u);
  CHECK(Skellams(40, 6, &drawn) == std::vector<int64_t>{-13, -17, 14, -3, 8, 0});
  CHECK(drawn == 38u);
  CHECK(Skellams(1e14, 6, &drawn) ==
        std::vector<int64_t>{1373341, -20077807, -26799254, 21954884, 6700278, -3319392});
  CHECK(drawn == 30u);
}

TEST_CASE("Poisson draws have Poisson's mean and variance at every scale") {
  for (double lambda : {3.5, 20.0, 1234.5, 5e13}) {
    auto key = PartyNoiseKey(1, 0, 0, 0);
    REQUIRE(key.ok());
    UniformStream u(*key);
    const int n = 20000;
    double sum = 0, sq = 0;
    std::vector<double> xs;
    for (int i = 0; i < n; ++i) xs.push_back(static_cast<double>(SamplePoisson(lambda, u)));
    for (double x : xs) sum += x;
    const double mean = sum / n;
    for (double x : xs) sq += (x - mean) * (x - mean);
    INFO("lambda " << lambda << " mean " << mean << " variance " << sq / n);
    CHECK(std::fabs(mean - lambda) < 5 * std::sqrt(lambda / n));
    CHECK(std::fabs(sq / n / lambda - 1) < 5 * std::sqrt(2.0 / n));
    CHECK(u.status().ok());
  }
}

TEST_CASE("log p(k) is Poisson's, and keeps its precision at lambda 1e14") {
  for (int64_t k : {0, 1, 7, 9, 10, 11, 50, 100, 1000})
    for (double lambda : {0.5, 9.0, 90.5, 1000.0}) {
      const double exact = -lambda + k * std::log(lambda) - std::lgamma(k + 1.0);
      INFO("k " << k << " lambda " << lambda);
      CHECK(LogPoissonPmf(k, lambda) == Approx(exact).epsilon(1e-10).margin(1e-9));
    }
  // Near the mean of 1e14: -d^2 / (2 lambda) - log(2 pi k) / 2 to first order.
  const double lambda = 1e14, d = 12345;
  const double approx = -d * d / (2 * lambda) - 0.5 * std::log(2 * M_PI * (lambda + d));
  CHECK(LogPoissonPmf(static_cast<int64_t>(lambda + d), lambda) ==
        Approx(approx).margin(1e-6));
}

SecureEncoding NoisyEncoding(size_t k, double mu, uint64_t seed) {
  SecureEncoding e;
  for (uint32_t i = 0; i < k; ++i) e.support.push_back(2 * i);
  e.round = 3;
  e.model = 1;
  e.noise_mu = mu;
  e.noise_seed = seed;
  return e;
}

TEST_CASE("t parties' noises sum to the target variance") {
  const size_t k = 4000;
  const int t = 5;
  const double target = 4e12;  // (z D2)^2
  const SecureEncoding e = NoisyEncoding(k, target / t, 11);
  std::vector<int64_t> sum(k, 0);
  for (uint32_t party = 1; party <= t; ++party) {
    SecretWords q(k);
    REQUIRE(AddPartyNoise(e, party, &q).ok());
    for (size_t j = 0; j < k; ++j) sum[j] += static_cast<int32_t>(q[j]);
  }
  double sq = 0;
  for (int64_t s : sum) sq += static_cast<double>(s) * static_cast<double>(s);
  INFO("variance " << sq / k << " target " << target);
  CHECK(std::fabs(sq / k / target - 1) < 5 * std::sqrt(2.0 / k));
}

TEST_CASE("a party's noise is keyed by the seed, round, model and party, and fresh without a seed") {
  const SecureEncoding e = NoisyEncoding(64, 1e10, 11);
  const auto noised = [&](const SecureEncoding& enc, uint32_t party) {
    SecretWords q(64 + 3);
    for (size_t j = 0; j < q.size(); ++j) q[j] = 7;
    REQUIRE(AddPartyNoise(enc, party, &q).ok());
    return std::vector<uint32_t>(q.begin(), q.end());
  };
  const auto a = noised(e, 1);
  CHECK(a == noised(e, 1));
  CHECK(a != noised(e, 2));
  SecureEncoding other = e;
  other.round = 4;
  CHECK(a != noised(other, 1));
  // The words after the K values (a vote's) are left alone.
  CHECK(a[64] == 7u);
  CHECK(a[66] == 7u);
  SecureEncoding fresh = e;
  fresh.noise_seed = 0;
  CHECK(noised(fresh, 1) != noised(fresh, 1));
  SecureEncoding none = e;
  none.noise_mu = 0;
  CHECK(noised(none, 1) == std::vector<uint32_t>(67, 7u));
}

TEST_CASE("a bad noise variance is refused and leaves the input as it was") {
  for (double mu : std::vector<double>{-1.0, std::nan(""), HUGE_VAL, 0x1.0p51}) {
    const SecureEncoding e = NoisyEncoding(8, mu, 1);
    SecretWords q(8);
    q[0] = 5;
    const absl::Status st = AddPartyNoise(e, 1, &q);
    INFO(st.message());
    CHECK(st.code() == absl::StatusCode::kInvalidArgument);
    CHECK(q[0] == 5u);
  }
  SecureEncoding e = NoisyEncoding(8, 10, 1);
  SecretWords small(4);
  CHECK(AddPartyNoise(e, 1, &small).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("a client's words stay within its L2 clip, and its residual keeps the rest") {
  const size_t d = 600;
  SecureEncoding e;
  for (uint32_t i = 1; i < d; i += 3) e.support.push_back(i);
  e.clip = 1.0;
  e.scale_bits = 20;
  e.seed = 5;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 0.2f);
  std::vector<float> delta(d);
  for (float& v : delta) v = normal(rng);
  const double weight = 0.5, l2 = 0.3;
  std::vector<float> residual;
  SecretWords q;
  REQUIRE(AddClientInput(delta, weight, 17, e, &residual, &q, 0, l2).ok());
  double norm = 0, before = 0;
  for (size_t j = 0; j < e.support.size(); ++j) {
    const double v = std::ldexp(static_cast<int32_t>(q[j]), -e.scale_bits);
    norm += v * v;
    before += std::pow(delta[e.support[j]], 2);
  }
  REQUIRE(std::sqrt(before) > 5 * l2);  // the clip bites
  // weight * l2, plus at most one unit of rounding a word.
  CHECK(std::sqrt(norm) <= weight * l2 + std::sqrt(e.support.size()) * std::ldexp(1, -e.scale_bits));
  CHECK(std::sqrt(norm) == Approx(weight * l2).epsilon(1e-3));
  // What was sent plus what stays is the update, on and off the support.
  for (size_t j = 0; j < e.support.size(); ++j) {
    const double sent = std::ldexp(static_cast<int32_t>(q[j]), -e.scale_bits) / weight;
    CHECK(sent + residual[e.support[j]] == Approx(delta[e.support[j]]).margin(1e-6));
  }
  CHECK(residual[0] == delta[0]);
  // A client whose update is not finite sends zeros.
  std::vector<float> bad = delta;
  bad[e.support[3]] = NAN;
  std::vector<float> r2;
  SecretWords q2;
  REQUIRE(AddClientInput(bad, weight, 17, e, &r2, &q2, 0, l2).ok());
  for (size_t j = 0; j < e.support.size(); ++j) CHECK(q2[j] == 0u);
  std::vector<float> r3;
  SecretWords q3;
  CHECK(AddClientInput(delta, weight, 17, e, &r3, &q3, 0, -1).code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("the honest range widens by the noise's tail, and an inflated norm is singled out") {
  CHECK(NoisyWordBound(100, 0) == 100u);
  CHECK(NoisyWordBound(100, 1e12) == 100u + 10000000u);
  const size_t k = 5000;
  const double variance = 1e12;
  std::mt19937_64 rng(8);
  std::normal_distribution<double> normal(0, std::sqrt(variance));
  std::vector<uint32_t> noise(k), lied(k);
  for (size_t j = 0; j < k; ++j) {
    const double n = std::round(normal(rng));
    noise[j] = static_cast<uint32_t>(static_cast<int64_t>(n));
    // A liar's 3 standard deviations a word: inside the word bound.
    lied[j] = static_cast<uint32_t>(static_cast<int64_t>(n + 3e6));
  }
  const uint64_t bound = NoisyWordBound(1000, variance);
  CHECK_FALSE(FirstDishonestWord(lied, bound).has_value());
  CHECK_FALSE(DishonestNorm(noise, 1000, variance).has_value());
  const auto norm = DishonestNorm(lied, 1000, variance);
  REQUIRE(norm.has_value());
  CHECK(*norm > 3e6 * std::sqrt(static_cast<double>(k)));
}

TEST_CASE("a party's own floor refuses a session whose noise is below it") {
  SecureEncoding e = NoisyEncoding(10, 0, 1);
  e.scale_bits = 20;
  // Two clients, the larger moving the sum by 0.5 x 0.4 x 2^20; t = 4
  // survivors at mu give sqrt(4 mu): multiplier 2 at mu = (0.2 2^20)^2.
  const std::vector<ClientClip> clips = {{0.5, 0.4}, {1.0, 0.1}};
  e.noise_mu = std::pow(0.2 * 1048576, 2);
  CHECK(CheckNoiseFloor(e, 4, clips, 0).ok());
  CHECK(CheckNoiseFloor(e, 4, clips, 1.99).ok());
  CHECK(CheckNoiseFloor(e, 4, clips, 2.0).ok());
  const absl::Status low = CheckNoiseFloor(e, 4, clips, 2.01);
  CHECK(low.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(low.message()), Catch::Contains("--dp-min-multiplier 2.01"));
  CHECK_FALSE(CheckNoiseFloor(e, 1, clips, 1.5).ok());  // a smaller t
  e.noise_mu = 0;
  CHECK_FALSE(CheckNoiseFloor(e, 4, clips, 0.1).ok());
  e.noise_mu = 1e20;
  CHECK_THAT(std::string(CheckNoiseFloor(e, 4, {{1.0, 0.0}}, 0.1).message()),
             Catch::Contains("no L2 clip"));
}

}  // namespace
}  // namespace shefl
