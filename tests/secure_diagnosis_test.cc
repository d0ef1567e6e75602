// The support diagnosis (common/secure/support_diagnosis.h): a client's
// weighted, clipped x summed densely and its own top-k joined to the union,
// by hand; the party's bytes read back by the coordinator, and refused
// (naming the field, nothing added) when they are the wrong size, not
// finite or not ascending; the energy share and the overlap by hand.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/secure/support_diagnosis.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

SupportDiagnosis TwoClients() {
  SupportDiagnosis d;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> delta1{0.5f, -3.0f, nan, 0.1f}, r1{0.25f, 0, 1, 0};
  AddClientDiagnosis(delta1, r1, 0.5, 1.0, 2, &d);
  const std::vector<float> delta2{0, 0, 0, -0.2f};
  AddClientDiagnosis(delta2, {}, 0.25, 1.0, 1, &d);
  return d;
}

TEST_CASE("a client's clipped, weighted x is summed densely and its own top-k joins the union") {
  const SupportDiagnosis d = TwoClients();
  REQUIRE(d.dense.size() == 4u);
  CHECK(d.dense[0] == Approx(0.375));  // 0.5 x (0.5 + 0.25)
  CHECK(d.dense[1] == Approx(-0.5));   // 0.5 x clip(-3)
  CHECK(d.dense[2] == 0.0);            // NaN counts 0
  CHECK(d.dense[3] == Approx(0.0).margin(1e-9));
  CHECK(d.own_union == std::vector<uint32_t>{0, 1, 3});
}

TEST_CASE("the coordinator reads a party's bytes back, and refuses bad ones whole") {
  const SupportDiagnosis party = TwoClients();
  SupportDiagnosis sum;
  REQUIRE(AddPartyDiagnosis(DenseBytes(party), UnionBytes(party), 4, &sum).ok());
  REQUIRE(AddPartyDiagnosis(DenseBytes(party), UnionBytes(party), 4, &sum).ok());
  CHECK(sum.dense[0] == Approx(0.75));
  CHECK(sum.own_union == std::vector<uint32_t>{0, 1, 3});
  const SupportDiagnosis before = sum;
  std::string short_dense = DenseBytes(party).substr(4);
  CHECK_THAT(std::string(AddPartyDiagnosis(short_dense, "", 4, &sum).message()),
             Catch::Contains("dense holds 12 bytes"));
  SupportDiagnosis inf = party;
  inf.dense[2] = std::numeric_limits<double>::infinity();
  CHECK_THAT(std::string(AddPartyDiagnosis(DenseBytes(inf), "", 4, &sum).message()),
             Catch::Contains("dense value 2 is not finite"));
  SupportDiagnosis backwards = party;
  backwards.own_union = {3, 1};
  CHECK_THAT(std::string(
                 AddPartyDiagnosis(DenseBytes(party), UnionBytes(backwards), 4, &sum).message()),
             Catch::Contains("own_union position 1"));
  backwards.own_union = {4};
  CHECK_FALSE(AddPartyDiagnosis(DenseBytes(party), UnionBytes(backwards), 4, &sum).ok());
  CHECK(sum.dense == before.dense);
  CHECK(sum.own_union == before.own_union);
}

TEST_CASE("the energy share and the overlap, by hand") {
  SupportDiagnosis sum;
  sum.dense = {3, 0, -4, 0, 0};
  sum.own_union = {0, 1, 2, 4};
  SupportFit fit = FitOf(sum, std::vector<uint32_t>{2, 3});
  CHECK(fit.energy == Approx(16.0 / 25));
  CHECK(fit.overlap == Approx(1.0 / 4));
  fit = FitOf(sum, std::vector<uint32_t>{0, 1, 2, 3, 4});
  CHECK(fit.energy == Approx(1.0));
  CHECK(fit.overlap == Approx(1.0));
  const SupportFit none = FitOf(SupportDiagnosis{}, std::vector<uint32_t>{1});
  CHECK(none.energy == 0.0);
  CHECK(none.overlap == 0.0);
}

}  // namespace
}  // namespace shefl
