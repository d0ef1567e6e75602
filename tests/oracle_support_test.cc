// The oracle support (common/fed/oracle_support.h): of the sum plus the
// residual, the K largest magnitudes (ties to the lower coordinate) are
// kept, the rest waits in the residual; the energy share is what the kept
// coordinates hold of the whole; a non-finite sum leaves everything as it
// was.
#include "common/fed/oracle_support.h"

#include <cmath>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("oracle: the top K of the sum and the residual, the rest kept back") {
  std::vector<float> residual;  // none yet
  const std::vector<float> sum = {0.5f, -3.0f, 1.0f, 0.0f, 2.0f, -1.0f};
  auto c = OracleSelect(sum, 2, &residual);
  REQUIRE(c.has_value());
  CHECK(c->update.dim == 6);
  CHECK(c->update.indices == std::vector<uint32_t>{1, 4});
  CHECK(c->update.values == std::vector<float>{-3.0f, 2.0f});
  // 9 + 4 of 0.25 + 9 + 1 + 0 + 4 + 1 = 15.25.
  CHECK(c->energy == Approx(13.0 / 15.25));
  CHECK(residual == std::vector<float>{0.5f, 0.0f, 1.0f, 0.0f, 0.0f, -1.0f});
  // Next round the residual adds in: v = {1.5, 0, 2, 0, 0, -2.5}, whose
  // top two are at 5 and 2; 1.5 at 0 waits again.
  const std::vector<float> next = {1.0f, 0.0f, 1.0f, 0.0f, 0.0f, -1.5f};
  c = OracleSelect(next, 2, &residual);
  REQUIRE(c.has_value());
  CHECK(c->update.indices == std::vector<uint32_t>{2, 5});
  CHECK(c->update.values == std::vector<float>{2.0f, -2.5f});
  CHECK(residual == std::vector<float>{1.5f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f});
  // Ties go to the lower coordinate; K >= d keeps all, energy 1.
  std::vector<float> r2;
  c = OracleSelect({1.0f, -1.0f, 1.0f}, 1, &r2);
  CHECK(c->update.indices == std::vector<uint32_t>{0});
  std::vector<float> r3;
  c = OracleSelect({1.0f, 2.0f}, 5, &r3);
  CHECK(c->update.indices.size() == 2);
  CHECK(c->energy == 1.0);
  std::vector<float> r4;
  CHECK(OracleSelect({0.0f, 0.0f}, 1, &r4)->energy == 1.0);
}

TEST_CASE("oracle: a sum that is not finite changes nothing") {
  std::vector<float> residual = {0.25f, 0.5f};
  CHECK_FALSE(OracleSelect({NAN, 1.0f}, 1, &residual).has_value());
  CHECK_FALSE(OracleSelect({INFINITY, 1.0f}, 1, &residual).has_value());
  CHECK(residual == std::vector<float>{0.25f, 0.5f});
}

}  // namespace
}  // namespace shefl
