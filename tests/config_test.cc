#include "common/config.h"

#include <catch2/catch.hpp>

#include <fstream>
#include <string>

namespace shefl {
namespace {

std::string ErrorOf(const std::string& yaml,
                    const std::vector<std::string>& overrides = {}) {
  auto c = ParseConfigWithOverrides(yaml, "test.yaml", overrides);
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

TEST_CASE("defaults parse from an empty file") {
  auto c = ParseConfig("", "empty.yaml");
  REQUIRE(c.ok());
  CHECK(c->method == "shefl");
  CHECK(c->model.num_models == 5);
  CHECK(c->compression.density == Approx(0.1));
  CHECK(ResourceRatio(*c) == 5.0);
}

TEST_CASE("nested keys set typed fields") {
  auto c = ParseConfig(
      "name: t\nrounds: 7\nseed: 42\n"
      "data: {dataset: synthetic}\n"
      "compression:\n  density: 0.02\n  value_type: fp16\n"
      "  error_feedback: true\n",
      "t.yaml");
  REQUIRE(c.ok());
  CHECK(c->rounds == 7);
  CHECK(c->seed == 42u);
  CHECK(c->data.dataset == "synthetic");
  CHECK(c->compression.density == Approx(0.02));
  CHECK(c->compression.value_type == "fp16");
  CHECK(c->compression.error_feedback);
}

TEST_CASE("every config error names its key") {
  SECTION("unknown key, with a hint") {
    std::string e = ErrorOf("clients:\n  num_hpcs: 3\n");
    CHECK_THAT(e, Catch::Contains("clients.num_hpcs"));
    CHECK_THAT(e, Catch::Contains("did you mean 'clients.num_hpc'"));
    CHECK_THAT(e, Catch::Contains("test.yaml:2"));
  }
  SECTION("wrong type") {
    std::string e = ErrorOf("rounds: many\n");
    CHECK_THAT(e, Catch::Contains("'rounds'"));
    CHECK_THAT(e, Catch::Contains("expected an integer"));
  }
  SECTION("fraction where an integer is due") {
    CHECK_THAT(ErrorOf("train:\n  batch_size: 1.5\n"),
               Catch::Contains("train.batch_size"));
  }
  SECTION("out of range") {
    std::string e = ErrorOf("compression:\n  density: 1.5\n");
    CHECK_THAT(e, Catch::Contains("compression.density"));
    CHECK_THAT(e, Catch::Contains("out of range"));
  }
  SECTION("bad choice") {
    std::string e = ErrorOf("aggregation:\n  rule: median\n");
    CHECK_THAT(e, Catch::Contains("aggregation.rule"));
    CHECK_THAT(e, Catch::Contains("workload_aware"));
  }
  SECTION("a section that is not a mapping") {
    CHECK_THAT(ErrorOf("train: 3\n"), Catch::Contains("'train'"));
  }
  SECTION("cross-key: cohort larger than the tier") {
    CHECK_THAT(ErrorOf("clients: {num_clients: 10, num_hpc: 2, "
                       "per_round_hpc: 3}\n"),
               Catch::Contains("clients.per_round_hpc"));
  }
  SECTION("cross-key: fedavg with an ensemble") {
    CHECK_THAT(ErrorOf("method: fedavg\nmodel: {num_models: 3}\n"),
               Catch::Contains("model.num_models"));
  }
  SECTION("override: unknown key") {
    CHECK_THAT(ErrorOf("", {"compression.densty=0.1"}),
               Catch::Contains("compression.densty"));
  }
  SECTION("override: bad value") {
    CHECK_THAT(ErrorOf("", {"rounds=-3"}), Catch::Contains("'rounds'"));
  }
  SECTION("override: no equals sign") {
    CHECK_THAT(ErrorOf("", {"rounds"}), Catch::Contains("key=value"));
  }
  SECTION("invalid YAML names the file") {
    CHECK_THAT(ErrorOf("a: [1, 2\n"), Catch::Contains("test.yaml"));
  }
}

TEST_CASE("overrides from --set win over the file, in order") {
  auto c = ParseConfigWithOverrides(
      "rounds: 10\n", "t.yaml",
      {"rounds=3", "compression.density=0.02", "rounds=4", "name=x y"});
  REQUIRE(c.ok());
  CHECK(c->rounds == 4);
  CHECK(c->compression.density == Approx(0.02));
  CHECK(c->name == "x y");
}

TEST_CASE("method presets fill only unset keys") {
  auto avg = ParseConfig("method: fedavg\n", "t.yaml");
  REQUIRE(avg.ok());
  CHECK(avg->model.num_models == 1);
  CHECK(avg->aggregation.rule == "uniform");
  auto prox = ParseConfig("method: fedprox\n", "t.yaml");
  REQUIRE(prox.ok());
  CHECK(prox->train.prox_mu == Approx(0.01));
  auto prox2 = ParseConfig("method: fedprox\ntrain: {prox_mu: 0.1}\n", "t");
  REQUIRE(prox2.ok());
  CHECK(prox2->train.prox_mu == Approx(0.1));
  auto ens = ParseConfig("method: fedensemble\n", "t.yaml");
  REQUIRE(ens.ok());
  CHECK(ens->aggregation.rule == "uniform");
  CHECK(ens->model.num_models == 5);
}

TEST_CASE("the resolved config round-trips through YAML") {
  auto c = ParseConfigWithOverrides("", "t.yaml",
                                    {"compression.density=0.013",
                                     "train.lr=0.05", "name=quick run"});
  REQUIRE(c.ok());
  const std::string yaml = ConfigToYaml(*c);
  auto back = ParseConfig(yaml, "resolved.yaml");
  REQUIRE(back.ok());
  CHECK(ConfigToYaml(*back) == yaml);
  CHECK(back->compression.density == c->compression.density);
  CHECK(back->name == "quick run");
  CHECK(yaml.find("density: 0.013") != std::string::npos);
}

TEST_CASE("the shipped configs load") {
  for (const char* name : {"quick.yaml", "fmnist-paper.yaml"}) {
    auto c = LoadConfig(std::string(SHEFL_SOURCE_DIR) + "/configs/" + name);
    INFO(name);
    REQUIRE(c.ok());
    CHECK(c->data.dataset == "fmnist");
  }
  auto paper = LoadConfig(std::string(SHEFL_SOURCE_DIR) +
                          "/configs/fmnist-paper.yaml");
  REQUIRE(paper.ok());
  CHECK(paper->clients.num_clients == 100);
  CHECK(paper->clients.num_hpc == 50);
  CHECK(paper->model.num_models == 5);
  CHECK(paper->partition.alpha == Approx(0.6));
  CHECK(paper->train.batch_size == 16);
  CHECK(paper->rounds == 100);
}

TEST_CASE("a missing file is an error naming it") {
  auto c = LoadConfig("/nonexistent/x.yaml");
  REQUIRE_FALSE(c.ok());
  CHECK_THAT(std::string(c.status().message()),
             Catch::Contains("/nonexistent/x.yaml"));
}

}  // namespace
}  // namespace shefl
