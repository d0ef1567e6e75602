#include "common/core/config.h"

#include <fstream>
#include <string>

#include "common/fed/config_load.h"

#include <catch2/catch.hpp>

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

// Every error from the file names the file, the line and the dotted key.
void CheckPlace(const std::string& error, const std::string& place,
                const std::string& key) {
  INFO(error);
  CHECK_THAT(error, Catch::StartsWith(place + ": "));
  CHECK_THAT(error, Catch::Contains("'" + key + "'"));
}

TEST_CASE("every config error names its key") {
  SECTION("unknown key, with a hint") {
    std::string e = ErrorOf("clients:\n  num_hpcs: 3\n");
    CheckPlace(e, "test.yaml:2", "clients.num_hpcs");
    CHECK_THAT(e, Catch::Contains("did you mean 'clients.num_hpc'"));
  }
  SECTION("wrong type") {
    std::string e = ErrorOf("name: x\nrounds: many\n");
    CheckPlace(e, "test.yaml:2", "rounds");
    CHECK_THAT(e, Catch::Contains("expected an integer"));
    CheckPlace(ErrorOf("compression:\n  error_feedback: maybe\n"),
               "test.yaml:2", "compression.error_feedback");
    CheckPlace(ErrorOf("train:\n\n  lr: fast\n"), "test.yaml:3", "train.lr");
  }
  SECTION("fraction where an integer is due") {
    CheckPlace(ErrorOf("train:\n  batch_size: 1.5\n"), "test.yaml:2",
               "train.batch_size");
  }
  SECTION("out of range") {
    std::string e = ErrorOf("rounds: 3\ncompression:\n  density: 1.5\n");
    CheckPlace(e, "test.yaml:3", "compression.density");
    CHECK_THAT(e, Catch::Contains("out of range"));
    CheckPlace(ErrorOf("seed: -1\n"), "test.yaml:1", "seed");
  }
  SECTION("bad choice") {
    std::string e = ErrorOf("aggregation:\n  rule: median\n");
    CheckPlace(e, "test.yaml:2", "aggregation.rule");
    CHECK_THAT(e, Catch::Contains("workload_aware"));
  }
  SECTION("a section that is not a mapping") {
    CheckPlace(ErrorOf("rounds: 2\ntrain: 3\n"), "test.yaml:2", "train");
  }
  SECTION("cross-key: cohort larger than the tier") {
    CheckPlace(ErrorOf("clients: {num_clients: 10, num_hpc: 2, "
                       "per_round_hpc: 3}\n"),
               "test.yaml:1", "clients.per_round_hpc");
    CheckPlace(ErrorOf("rounds: 2\nclients:\n  num_clients: 10\n"
                       "  num_hpc: 8\n  per_round_lpc: 3\n"),
               "test.yaml:5", "clients.per_round_lpc");
  }
  SECTION("cross-key: a default broken by another key points at that key") {
    // per_round_hpc keeps its default (5); num_hpc on line 3 breaks it.
    CheckPlace(ErrorOf("rounds: 2\nclients:\n  num_hpc: 2\n"),
               "test.yaml:3", "clients.per_round_hpc");
  }
  SECTION("cross-key: fedavg with an ensemble") {
    CheckPlace(ErrorOf("method: fedavg\nmodel:\n  num_models: 3\n"),
               "test.yaml:3", "model.num_models");
    CheckPlace(ErrorOf("method: fedavg\naggregation:\n  rule: paper\n"),
               "test.yaml:3", "aggregation.rule");
  }
  SECTION("cross-key: nothing to train, shards too few") {
    CheckPlace(ErrorOf("train:\n  local_epochs: 0\n  local_steps: 0\n"),
               "test.yaml:2", "train.local_epochs");
    CheckPlace(ErrorOf("partition:\n  scheme: shards\n  shards: 4\n"),
               "test.yaml:3", "partition.shards");
  }
  SECTION("cross-key from --set is placed at --set") {
    CheckPlace(ErrorOf("method: fedavg\n", {"model.num_models=2"}), "--set",
               "model.num_models");
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
  CHECK(avg->compression.density == 1.0);  // dense, as in the papers
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
  CHECK(ens->compression.density == 1.0);
  auto topk = ParseConfig("method: fedensemble\ncompression: {density: 0.02}\n", "t");
  REQUIRE(topk.ok());
  CHECK(topk->compression.density == Approx(0.02));
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

namespace shefl {
namespace {

TEST_CASE("aggregation.reduction fixed_point refuses what needs the whole round") {
  // The default robust bounds compare norms at close: refused, naming the
  // reduction where it was set and the bound that stands in the way.
  std::string e = ErrorOf("aggregation:\n  reduction: fixed_point\n");
  CheckPlace(e, "test.yaml:2", "aggregation.reduction");
  CHECK_THAT(e, Catch::Contains("robust.clip_multiple"));
  e = ErrorOf("aggregation:\n  reduction: fixed_point\nrobust:\n"
              "  clip_multiple: 0\n  refuse_multiple: 0\n  trim: 0.1\n");
  CHECK_THAT(e, Catch::Contains("aggregation.reduction") &&
                    Catch::Contains("robust.trim"));
  e = ErrorOf("method: fens\naggregation:\n  reduction: fixed_point\n"
              "  robust: false\n");
  CHECK_THAT(e, Catch::Contains("aggregation.reduction") &&
                    Catch::Contains("fens"));
  // Without those bounds (max_abs stays: it checks each update), or with
  // aggregation.robust off, it loads.
  auto ok = ParseConfig("aggregation:\n  reduction: fixed_point\nrobust:\n"
                        "  clip_multiple: 0\n  refuse_multiple: 0\n",
                        "test.yaml");
  REQUIRE(ok.ok());
  CHECK(ok->aggregation.reduction == "fixed_point");
  CHECK(ParseConfig("aggregation:\n  reduction: fixed_point\n  robust: false\n",
                    "test.yaml")
            .ok());
  CHECK(ParseConfig("", "test.yaml")->aggregation.reduction == "client_order");
  CheckPlace(ErrorOf("aggregation:\n  reduction: fast\n"), "test.yaml:2",
             "aggregation.reduction");
}

}  // namespace
}  // namespace shefl
