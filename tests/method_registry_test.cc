// The method registry (common/fed/methods/): lookups, traits, presets, and
// the one message that lists every key a method needs changed. Links only
// common/fed and common/core: no LibTorch, no server.
#include <string>

#include "common/core/config.h"
#include "common/core/model_catalog.h"
#include "common/fed/config_load.h"
#include "common/fed/methods/registry.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

std::string ErrorOf(const std::string& yaml,
                    const std::vector<std::string>& overrides = {}) {
  auto c = ParseConfigWithOverrides(yaml, "test.yaml", overrides);
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

TEST_CASE("every method of the contract is registered, with its traits") {
  for (const char* m : {"shefl", "fedensemble", "fedavg", "fedprox", "fens",
                        "hasa", "fedavgm", "fedadam"}) {
    INFO(m);
    auto found = FindMethod(m);
    REQUIRE(found.ok());
    CHECK((*found)->name() == m);
    CHECK_FALSE((*found)->summary().empty());
  }
  CHECK(MethodHasTiers("shefl"));
  CHECK_FALSE(MethodHasTiers("fedensemble"));
  CHECK(TraitsOf("shefl").default_density == 0.1);
  CHECK(TraitsOf("fedavg").default_density == 1.0);
  CHECK(TraitsOf("fens").round_shape == RoundShape::kOneShot);
  CHECK(TraitsOf("hasa").assignment == Assignment::kHasa);
  CHECK(TraitsOf("hasa").needs_label_counts);
  CHECK_FALSE(TraitsOf("fedavg").needs_label_counts);
}

TEST_CASE("an unknown method or model is refused at load with the known names") {
  const std::string m = ErrorOf("method: fedavgg\n");
  CHECK(m.find("test.yaml:1: key 'method': 'fedavgg' is not one of: shefl, "
               "fedensemble, fedavg") != std::string::npos);
  CHECK(m.find("fedadam") != std::string::npos);
  const std::string n = ErrorOf("model:\n  name: resnet50\n");
  CHECK(n.find("test.yaml:2: key 'model.name': 'resnet50' is not one of: "
               "cnn, mlp, resnet18, resnet34, text") != std::string::npos);
  CHECK(ErrorOf("", {"model.name=cnnn"}).find("--set: key 'model.name'") !=
        std::string::npos);
}

TEST_CASE("switching method lists every key it needs changed, with --set flags") {
  const std::string quick =
      "model:\n  num_models: 5\naggregation:\n  rule: workload_aware\n";
  const std::string m = ErrorOf(quick, {"method=fedavg"});
  INFO(m);
  CHECK(m.find("method fedavg needs 2 keys changed:") != std::string::npos);
  CHECK(m.find("test.yaml:2: key 'model.num_models' is 5: method fedavg "
               "trains one model") != std::string::npos);
  CHECK(m.find("test.yaml:4: key 'aggregation.rule' is workload_aware") !=
        std::string::npos);
  CHECK(m.find("add: --set model.num_models=1 --set aggregation.rule=uniform") !=
        std::string::npos);
  // Applying the flags it prints loads.
  CHECK(ParseConfigWithOverrides(quick, "test.yaml",
                                 {"method=fedavg", "model.num_models=1",
                                  "aggregation.rule=uniform"})
            .ok());
  const std::string f =
      ErrorOf("rounds: 10\nmodel: {num_models: 5}\nclients: {per_round_lpc: 3}\n",
              {"method=fens"});
  INFO(f);
  CHECK(f.find("method fens needs 3 keys changed:") != std::string::npos);
  CHECK(f.find("--set rounds=1 --set model.num_models=1 --set "
               "clients.per_round_lpc=100") != std::string::npos);
}

TEST_CASE("the server-optimiser methods preset FedAvg with a server optimiser") {
  auto m = ParseConfig("method: fedavgm\n", "m.yaml");
  REQUIRE(m.ok());
  CHECK(m->model.num_models == 1);
  CHECK(m->aggregation.rule == "uniform");
  CHECK(m->aggregation.server_optimizer == "momentum");
  CHECK(m->aggregation.server_momentum == 0.9);
  CHECK(m->aggregation.server_lr == 1.0);
  CHECK(m->compression.density == 1.0);
  auto a = ParseConfig("method: fedadam\n", "a.yaml");
  REQUIRE(a.ok());
  CHECK(a->aggregation.server_optimizer == "adam");
  CHECK(a->aggregation.server_lr == 0.01);
  CHECK(ErrorOf("method: fedavgm\naggregation: {server_optimizer: adam}\n")
            .find("key 'aggregation.server_optimizer': method fedavgm is "
                  "FedAvg with server momentum; got adam") != std::string::npos);
  // SHEFL's members take a server optimiser by the key alone.
  auto s = ParseConfig("aggregation: {server_optimizer: momentum}\n", "s.yaml");
  REQUIRE(s.ok());
  CHECK(s->method == "shefl");
  CHECK(s->aggregation.server_optimizer == "momentum");
}

TEST_CASE("the catalogue the loader checks is non-empty and has no duplicate") {
  const auto& names = ModelCatalog();
  REQUIRE(names.size() >= 5);
  for (size_t i = 0; i < names.size(); ++i)
    for (size_t j = i + 1; j < names.size(); ++j) CHECK(names[i] != names[j]);
  CHECK(IsKnownModel("cnn"));
  CHECK_FALSE(IsKnownModel("CNN"));
}

}  // namespace
}  // namespace shefl
