// aggregation.secure's keys at load (common/fed/config_load.cc): what a
// secure round cannot serve is refused naming the key -- a method that
// keeps every client's model (fens), the per-update robust bounds written
// out, a reduction of its own, over-selection, a threshold of 1, and a
// fixed-point sum that could overflow 32 bits (or 16, with
// secure.word_bits: 16), a vote without the layout support, SecAgg+
// fractions that leave no graph and an odd degree -- and what it
// replaces is
// resolved: the robust bounds off, secure.clip bounding each value, and
// error feedback on (the residual keeps what is not sent).
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/fed/config_load.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

absl::StatusOr<ExperimentConfig> Load(std::vector<std::string> sets) {
  sets.insert(sets.begin(), "aggregation.secure=common_support");
  return ParseConfigWithOverrides(SyntheticConfig(), "t.yaml", sets);
}

std::string ErrorOf(const std::vector<std::string>& sets) {
  auto c = Load(sets);
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

TEST_CASE("secure config: defaults, and the robust bounds resolved off") {
  auto off = ParseConfigWithOverrides(SyntheticConfig(), "t.yaml", {});
  REQUIRE(off.ok());
  CHECK(off->aggregation.secure == "off");
  CHECK(off->aggregation.robust);
  auto c = Load({});
  REQUIRE(c.ok());
  CHECK(c->aggregation.secure == "common_support");
  CHECK_FALSE(c->aggregation.robust);
  CHECK(c->compression.error_feedback);
  CHECK(c->secure.scale_bits == 24);
  CHECK(c->secure.clip == 1.0);
  CHECK(c->secure.min_parties == 5);
  CHECK(c->secure.explore_fraction == 0.25);
  // The resolved config (what daemons get) loads again.
  auto again = ParseConfigWithOverrides(ConfigToYaml(*c), "resolved", {});
  INFO((again.ok() ? "" : std::string(again.status().message())));
  REQUIRE(again.ok());
  CHECK(again->aggregation.secure == "common_support");
}

TEST_CASE("secure config: what needs each update is refused, naming the key") {
  // fens as it would otherwise load: one round, one model, every client.
  const std::vector<std::string> fens = {"method=fens", "rounds=1",
                                         "model.num_models=1",
                                         "clients.per_round_lpc=6"};
  CHECK_THAT(ErrorOf(fens), Catch::Contains("aggregation.secure"));
  CHECK_THAT(ErrorOf(fens), Catch::Contains("keeps every client's model"));
  CHECK_THAT(ErrorOf({"aggregation.robust=true"}),
             Catch::Contains("aggregation.robust"));
  CHECK_THAT(ErrorOf({"compression.error_feedback=false"}),
             Catch::Contains("compression.error_feedback"));
  CHECK_THAT(ErrorOf({"aggregation.reduction=fixed_point"}),
             Catch::Contains("aggregation.reduction"));
  CHECK_THAT(ErrorOf({"clients.over_selection=0.5"}),
             Catch::Contains("clients.over_selection"));
  CHECK_THAT(ErrorOf({"secure.threshold=1"}), Catch::Contains("secure.threshold"));
  CHECK_THAT(ErrorOf({"aggregation.secure=masks"}),
             Catch::Contains("aggregation.secure"));
}

TEST_CASE("secure config: a sum that could overflow 32 bits is refused") {
  // 5 clients a round: 5 ceil(c 2^24) < 2^31 holds up to c = 25.6.
  CHECK(Load({"secure.clip=25"}).ok());
  const std::string e = ErrorOf({"secure.clip=26"});
  CHECK_THAT(e, Catch::Contains("secure.clip"));
  CHECK_THAT(e, Catch::Contains("overflow"));
  // A smaller scale makes room.
  CHECK(Load({"secure.clip=26", "secure.scale_bits=20"}).ok());
}

TEST_CASE("secure config: 16-bit words need sums below 2^15, and the vote the layout") {
  // 5 clients a round: 5 ceil(c 2^f) < 2^15 holds at c = 1 up to f = 12.
  CHECK(Load({"secure.word_bits=16", "secure.scale_bits=12"}).ok());
  std::string e = ErrorOf({"secure.word_bits=16"});  // f = 24
  CHECK_THAT(e, Catch::Contains("secure.word_bits"));
  CHECK_THAT(e, Catch::Contains("2^15"));
  e = ErrorOf({"secure.word_bits=16", "secure.scale_bits=13"});
  CHECK_THAT(e, Catch::Contains("secure.scale_bits"));
  CHECK_THAT(ErrorOf({"secure.word_bits=24"}), Catch::Contains("16 or 32"));
  CHECK_THAT(ErrorOf({"secure.vote=true"}), Catch::Contains("secure.support"));
  CHECK(Load({"secure.vote=true", "secure.support=layout"}).ok());
  // The oracle needs the clear sums.
  CHECK_THAT(ErrorOf({"secure.support=oracle"}), Catch::Contains("clear_support"));
  CHECK(Load({"secure.support=oracle", "aggregation.secure=clear_support"}).ok());
}

TEST_CASE("secure config: SecAgg+ fractions and degree are checked, naming the key") {
  ExperimentConfig c = *Load({});
  CHECK(c.secure.graph_above == 200);
  CHECK(c.secure.collude_fraction == Approx(1.0 / 3));
  CHECK(c.secure.graph_degree == 0);
  CHECK(Load({"secure.collude_fraction=0.05", "secure.dropout_fraction=0.5",
              "secure.graph_degree=40", "secure.graph_above=0"})
            .ok());
  std::string e = ErrorOf({"secure.collude_fraction=0.5", "secure.dropout_fraction=0.5"});
  CHECK_THAT(e, Catch::Contains("secure.collude_fraction"));
  CHECK_THAT(e, Catch::Contains("0.9"));
  CHECK_THAT(ErrorOf({"secure.graph_degree=7"}),
             Catch::Contains("secure.graph_degree") && Catch::Contains("even"));
  CHECK_THAT(ErrorOf({"secure.dropout_fraction=0.95"}),
             Catch::Contains("secure.dropout_fraction"));
}

TEST_CASE("secure config: the diagnosis only in the clear, and not with the oracle") {
  CHECK_THAT(ErrorOf({"secure.diagnose=true"}),
             Catch::Contains("secure.diagnose") && Catch::Contains("clear_support"));
  CHECK(Load({"secure.diagnose=true", "aggregation.secure=clear_support"}).ok());
  CHECK_THAT(ErrorOf({"secure.diagnose=true", "aggregation.secure=clear_support",
                      "secure.support=oracle"}),
             Catch::Contains("secure.diagnose") && Catch::Contains("oracle"));
}

}  // namespace
}  // namespace shefl
