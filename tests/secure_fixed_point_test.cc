// The fixed-point encoding of secure aggregation
// (common/secure/fixed_point.h): stochastic rounding is unbiased and
// reproducible from a seed, the error it returns is exactly what the
// encoding left out, sums of negative and of maximal values decode
// correctly through the mod 2^32 wrap, and the overflow check refuses
// configurations that could wrap, naming the config keys.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/secure/fixed_point.h"
#include "common/secure/masks.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("stochastic rounding is unbiased") {
  // 0.1 * 2^8 = 25.6: q is 25 or 26, 26 with probability 0.6.
  const int f = 8;
  const size_t n = 200000;
  const std::vector<float> x(n, 0.1f);
  std::mt19937_64 rng(8);
  absl::StatusOr<FixedPointEncoding> e = EncodeFixedPoint(x, 1.0, f, rng);
  REQUIRE(e.ok());
  double mean_error = 0, ups = 0;
  for (size_t i = 0; i < n; ++i) {
    REQUIRE((e->q[i] == 25 || e->q[i] == 26));
    ups += e->q[i] == 26;
    mean_error += e->error[i];
  }
  mean_error /= n;
  // One draw's error has standard deviation sqrt(0.6 * 0.4) / 2^8; the
  // mean of n has that over sqrt(n): allow 5 of those.
  const double sd = std::sqrt(0.24) / 256 / std::sqrt(static_cast<double>(n));
  CHECK(std::fabs(mean_error) < 5 * sd);
  CHECK(std::fabs(ups / n - 0.6) < 5 * std::sqrt(0.24 / n));
  // Negative values too: -0.1 * 2^8 = -25.6, -26 with probability 0.6.
  const std::vector<float> neg(n, -0.1f);
  e = EncodeFixedPoint(neg, 1.0, f, rng);
  REQUIRE(e.ok());
  mean_error = 0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t v = static_cast<int32_t>(e->q[i]);
    REQUIRE((v == -25 || v == -26));
    mean_error += e->error[i];
  }
  CHECK(std::fabs(mean_error / n) < 5 * sd);
}

TEST_CASE("the encoding is reproducible from a seed and its error is exact") {
  std::mt19937_64 values(1);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  std::vector<float> x(1000);
  for (float& v : x) v = u(values);
  std::mt19937_64 r1(42), r2(42), r3(43);
  absl::StatusOr<FixedPointEncoding> a = EncodeFixedPoint(x, 1.5, 20, r1);
  absl::StatusOr<FixedPointEncoding> b = EncodeFixedPoint(x, 1.5, 20, r2);
  absl::StatusOr<FixedPointEncoding> c = EncodeFixedPoint(x, 1.5, 20, r3);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(c.ok());
  CHECK(a->q == b->q);
  CHECK(a->q != c->q);
  absl::StatusOr<std::vector<float>> decoded = DecodeFixedPoint(a->q, 20);
  REQUIRE(decoded.ok());
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("x = " << x[i]);
    // decode(q) + error = x, up to the float rounding of the error.
    CHECK(std::fabs((*decoded)[i] + a->error[i] - x[i]) < 1e-6);
    if (std::fabs(x[i]) <= 1.5) {
      CHECK(std::fabs(a->error[i]) < std::ldexp(1.0, -20));
    } else {  // clipped: the error holds the excess
      CHECK(std::fabs((*decoded)[i]) <= 1.5);
      CHECK(std::fabs(a->error[i]) >= std::fabs(x[i]) - 1.5 - 1e-6);
    }
  }
}

TEST_CASE("sums of negative and of maximal values decode through the wrap") {
  std::mt19937_64 rng(5);
  // Values with exact encodings at f = 24 need no rounding draw to be exact.
  const std::vector<std::vector<float>> parties = {
      {-0.5f, -1.0f, 0.25f, -0.75f},
      {-0.5f, -1.0f, -0.25f, 1.0f},
      {-0.5f, -1.0f, -0.25f, -0.125f},
      {-0.5f, -1.0f, -0.25f, 0.0f},
      {-0.5f, -1.0f, 0.75f, -1.0f}};
  std::vector<uint32_t> sum;
  for (const std::vector<float>& x : parties) {
    absl::StatusOr<FixedPointEncoding> e = EncodeFixedPoint(x, 1.0, 24, rng);
    REQUIRE(e.ok());
    for (float err : e->error) CHECK(err == 0.0f);
    REQUIRE(AddMasked(&sum, e->q).ok());
  }
  absl::StatusOr<std::vector<float>> decoded = DecodeFixedPoint(sum, 24);
  REQUIRE(decoded.ok());
  CHECK(*decoded == std::vector<float>{-2.5f, -5.0f, 0.25f, -0.875f});
  // The largest sum the check allows: 127 parties at +c and at -c, f = 24.
  REQUIRE(CheckFixedPointConfig(127, 1.0, 24).ok());
  for (float edge : {1.0f, -1.0f, 5.0f}) {  // 5 is clipped to 1
    std::vector<uint32_t> total;
    for (int i = 0; i < 127; ++i) {
      absl::StatusOr<FixedPointEncoding> e =
          EncodeFixedPoint(std::vector<float>{edge}, 1.0, 24, rng);
      REQUIRE(e.ok());
      REQUIRE(AddMasked(&total, e->q).ok());
    }
    absl::StatusOr<std::vector<float>> d = DecodeFixedPoint(total, 24);
    REQUIRE(d.ok());
    CHECK((*d)[0] == 127.0f * std::min(edge, 1.0f));
  }
}

TEST_CASE("the overflow check refuses n * c * 2^f >= 2^31 and names the keys") {
  CHECK(CheckFixedPointConfig(127, 1.0, 24).ok());
  CHECK(CheckFixedPointConfig(100, 1.0, 24).ok());
  const absl::Status s = CheckFixedPointConfig(128, 1.0, 24);  // exactly 2^31
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message().find("secure.scale_bits") != std::string::npos);
  CHECK(s.message().find("secure.clip") != std::string::npos);
  CHECK_FALSE(CheckFixedPointConfig(1000, 0.5, 24).ok());
  CHECK(CheckFixedPointConfig(1000, 0.5, 20).ok());
  // A value at the clip may round up: n * ceil(c 2^f) must stay below 2^31.
  CHECK(CheckFixedPointConfig(1, 2147483647.0, 0).ok());
  CHECK_FALSE(CheckFixedPointConfig(1, 2147483647.5, 0).ok());
  CHECK_FALSE(CheckFixedPointConfig(0, 1.0, 24).ok());
  const absl::Status f = CheckFixedPointConfig(10, 1.0, 31);
  CHECK_FALSE(f.ok());
  CHECK(f.message().find("secure.scale_bits") != std::string::npos);
  const absl::Status c = CheckFixedPointConfig(10, -1.0, 24);
  CHECK_FALSE(c.ok());
  CHECK(c.message().find("secure.clip") != std::string::npos);
  CHECK_FALSE(CheckFixedPointConfig(10, std::nan(""), 24).ok());
  CHECK_FALSE(CheckFixedPointConfig(10, INFINITY, 24).ok());
}

TEST_CASE(
    "encoding refuses values that are not finite and scales it cannot hold") {
  std::mt19937_64 rng(0);
  CHECK_FALSE(
      EncodeFixedPoint(std::vector<float>{1.0f, NAN}, 1.0, 24, rng).ok());
  CHECK_FALSE(
      EncodeFixedPoint(std::vector<float>{INFINITY}, 1.0, 24, rng).ok());
  CHECK_FALSE(EncodeFixedPoint(std::vector<float>{0.5f}, 256.0, 24, rng).ok());
  CHECK(EncodeFixedPoint(std::vector<float>{0.5f}, 127.0, 24, rng).ok());
  CHECK_FALSE(DecodeFixedPoint(std::vector<uint32_t>{1}, -1).ok());
}

}  // namespace
}  // namespace shefl
