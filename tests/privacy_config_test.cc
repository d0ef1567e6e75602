// privacy.* at load (common/fed/privacy_plan.h): what would publish an
// un-noised function of one client's data, or let one client change
// another's weight or clip, is refused naming the key -- fens, hasa,
// client-level figures, personalised weights, secure aggregation, the
// paper rules, sample weights, over-selection, the fixed-point reduction,
// the robust bounds written out, and adaptive clipping whose count noise
// leaves nothing for the sum -- and the figures the accountant reads:
// each tier's rate, delta's default 1/N^1.1, the count noise and z_Delta.
// Distributed DP needs masked secure sums and refuses what would send a
// client's data around the noise (the vote, the oracle support, the
// diagnosis), 16-bit words, adaptive clipping, and a scale whose noised
// sum would not fit its words (naming the most that fits); each party's
// noise is set for the session's t.
#include <cmath>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/fed/config_load.h"
#include "common/fed/privacy_plan.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

absl::StatusOr<ExperimentConfig> Load(std::vector<std::string> sets) {
  sets.insert(sets.begin(), "privacy.mode=central");
  return ParseConfigWithOverrides(SyntheticConfig(), "t.yaml", sets);
}

std::string ErrorOf(const std::vector<std::string>& sets) {
  auto c = Load(sets);
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

TEST_CASE("privacy config: off by default, and central pins the robust bounds off") {
  auto off = ParseConfigWithOverrides(SyntheticConfig(), "t.yaml", {});
  REQUIRE(off.ok());
  CHECK(off->privacy.mode == "off");
  CHECK(off->aggregation.robust);
  auto on = Load({});
  REQUIRE(on.ok());
  CHECK_FALSE(on->aggregation.robust);
  CHECK(on->privacy.noise_multiplier == 1.0);
  CHECK(on->privacy.clip == 1.0);
}

TEST_CASE("privacy config: what would release one client's data is refused naming the key") {
  CHECK_THAT(ErrorOf({"method=fens", "rounds=1", "model.num_models=1",
                      "clients.per_round_lpc=6"}),
             Catch::Contains("privacy.mode") && Catch::Contains("fens"));
  CHECK_THAT(ErrorOf({"method=hasa", "hasa.r_min=0.5"}),
             Catch::Contains("privacy.mode") && Catch::Contains("hasa"));
  CHECK_THAT(ErrorOf({"eval.client_holdout=0.1"}),
             Catch::Contains("eval.client_holdout"));
  CHECK_THAT(ErrorOf({"eval.gamma=1"}), Catch::Contains("eval.gamma"));
  CHECK_THAT(ErrorOf({"aggregation.secure=common_support"}),
             Catch::Contains("aggregation.secure"));
}

TEST_CASE("privacy config: the sum's coefficients must be fixed before the round") {
  CHECK_THAT(ErrorOf({"aggregation.rule=paper"}),
             Catch::Contains("aggregation.rule") && Catch::Contains("planned"));
  CHECK_THAT(ErrorOf({"aggregation.rule=paper_per_model"}),
             Catch::Contains("aggregation.rule"));
  CHECK_THAT(ErrorOf({"aggregation.weight_by_samples=true"}),
             Catch::Contains("aggregation.weight_by_samples"));
  CHECK_THAT(ErrorOf({"clients.over_selection=0.2"}),
             Catch::Contains("clients.over_selection"));
  CHECK_THAT(ErrorOf({"aggregation.reduction=fixed_point"}),
             Catch::Contains("aggregation.reduction"));
  CHECK_THAT(ErrorOf({"aggregation.robust=true"}),
             Catch::Contains("aggregation.robust") && Catch::Contains("clip"));
  CHECK_THAT(ErrorOf({"privacy.mode=distributed"}),
             Catch::Contains("privacy.mode"));
  CHECK_THAT(ErrorOf({"privacy.noise_multiplier=0"}),
             Catch::Contains("privacy.noise_multiplier"));
}

TEST_CASE("privacy config: adaptive clipping needs count noise above z over 2") {
  // The cohort is 5, so the default sigma_b is 0.25: 2 sigma_b < z = 1.
  CHECK_THAT(ErrorOf({"privacy.adaptive_clip=true"}),
             Catch::Contains("privacy.count_noise") && Catch::Contains("0.25"));
  auto c = Load({"privacy.adaptive_clip=true", "privacy.count_noise=2"});
  REQUIRE(c.ok());
  CHECK(ClipCountNoise(*c) == 2.0);
  // (1 - 1/16)^-1/2: the count takes 1/16 of the budget.
  CHECK(UpdateNoiseMultiplier(*c) == Approx(1 / std::sqrt(1 - 1.0 / 16)));
  auto fixed = Load({});
  REQUIRE(fixed.ok());
  CHECK(UpdateNoiseMultiplier(*fixed) == 1.0);
  CHECK(ClipCountNoise(*fixed) == Approx(5.0 / 20));
}

TEST_CASE("privacy config: each tier's sampling rate and delta's default") {
  auto c = Load({});
  REQUIRE(c.ok());
  const std::vector<SampledTier> tiers = PrivacyTiers(*c);
  REQUIRE(tiers.size() == 2u);
  CHECK(tiers[0].name == "hpc");
  CHECK(tiers[0].q == Approx(2.0 / 4));
  CHECK(tiers[1].name == "lpc");
  CHECK(tiers[1].q == Approx(3.0 / 4));
  CHECK(PrivacyDelta(*c) == Approx(std::pow(8.0, -1.1)));
  auto given = Load({"privacy.delta=1e-5"});
  REQUIRE(given.ok());
  CHECK(PrivacyDelta(*given) == 1e-5);
  // A method without tiers samples everyone at one rate.
  auto avg = Load({"method=fedavg", "model.num_models=1"});
  REQUIRE(avg.ok());
  const std::vector<SampledTier> all = PrivacyTiers(*avg);
  REQUIRE(all.size() == 1u);
  CHECK(all[0].name == "all");
  CHECK(all[0].q == Approx(5.0 / 8));
}

absl::StatusOr<ExperimentConfig> LoadDistributed(std::vector<std::string> sets) {
  sets.insert(sets.begin(), {"privacy.mode=distributed",
                             "aggregation.secure=common_support"});
  return ParseConfigWithOverrides(SyntheticConfig(), "t.yaml", sets);
}

std::string DistributedError(const std::vector<std::string>& sets) {
  auto c = LoadDistributed(sets);
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

TEST_CASE("privacy config: distributed DP needs masked sums and refuses what goes around its noise") {
  auto ok = LoadDistributed({});
  INFO((ok.ok() ? "" : std::string(ok.status().message())));
  REQUIRE(ok.ok());
  CHECK_THAT(DistributedError({"aggregation.secure=off"}),
             Catch::Contains("aggregation.secure") && Catch::Contains("common_support"));
  CHECK_THAT(DistributedError({"aggregation.secure=clear_support"}),
             Catch::Contains("aggregation.secure"));
  CHECK_THAT(DistributedError({"secure.support=layout", "secure.vote=true"}),
             Catch::Contains("secure.vote"));
  CHECK_THAT(DistributedError({"secure.word_bits=16", "secure.scale_bits=8"}),
             Catch::Contains("secure.word_bits"));
  CHECK_THAT(DistributedError({"privacy.adaptive_clip=true"}),
             Catch::Contains("privacy.adaptive_clip"));
  CHECK_THAT(DistributedError({"eval.client_holdout=0.1"}),
             Catch::Contains("eval.client_holdout"));
}

TEST_CASE("privacy config: a noised sum must fit its 32-bit words") {
  // S = 64 at f = 24: the noise alone is about 10^10.
  const std::string e = DistributedError({"privacy.clip=64"});
  CHECK_THAT(e, Catch::Contains("secure.scale_bits") && Catch::Contains("most that fits is"));
  auto fits = LoadDistributed({"privacy.clip=64", "secure.scale_bits=20"});
  INFO((fits.ok() ? "" : std::string(fits.status().message())));
  CHECK(fits.ok());
}

TEST_CASE("privacy config: each party's noise is set for t survivors") {
  auto c = LoadDistributed({"privacy.noise_multiplier=2", "privacy.clip=0.5"});
  REQUIRE(c.ok());
  CHECK(PlannedThreshold(*c, 6) == 5);
  CHECK(PlannedThreshold(*c, 10) == 7);
  // (z (S 2^f + sqrt(M K)))^2 / t with M = 3, K = 12.
  const double d2 = 0.5 * std::ldexp(1.0, 24) + 6;
  CHECK(PartyNoiseVariance(*c, 12, 5) == Approx(4 * d2 * d2 / 5).epsilon(1e-12));
  auto fixed = LoadDistributed({"secure.threshold=4"});
  REQUIRE(fixed.ok());
  CHECK(PlannedThreshold(*fixed, 6) == 4);
}

}  // namespace
}  // namespace shefl
