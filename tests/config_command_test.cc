// `shefl config`: the resolved config as YAML (presets and --set applied),
// which loads again to the same text, and the loader's errors naming the
// key with exit status 2.
#include <string>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

using shefl::testing::BinDir;
using shefl::testing::RunProcess;
using shefl::testing::TempDir;
using shefl::testing::WriteFile;

namespace {

std::string Quick() { return std::string(SHEFL_SOURCE_DIR) + "/configs/quick.yaml"; }

bool Has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

}  // namespace

TEST_CASE("shefl config prints the resolved config and that loads again") {
  auto r = RunProcess({BinDir() + "/shefl", "config", Quick(), "--set",
                       "rounds=3", "--set=train.lr=0.02"},
                      30);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(Has(r.output, "rounds: 3\n"));
  CHECK(Has(r.output, "  lr: 0.02\n"));
  CHECK(Has(r.output, "name: \"quick\"\n"));
  // Every key is written, those the file leaves unset included.
  CHECK(Has(r.output, "  staller_rounds_out: 5\n"));

  TempDir dir;
  WriteFile(dir / "resolved.yaml", r.output);
  auto again = RunProcess({BinDir() + "/shefl", "config", dir / "resolved.yaml"}, 30);
  REQUIRE(again.exit_code == 0);
  CHECK(again.output == r.output);
}

TEST_CASE("shefl config applies the method's presets") {
  auto r = RunProcess({BinDir() + "/shefl", "config", Quick(), "--set",
                       "method=fedprox", "--set", "model.num_models=1", "--set",
                       "aggregation.rule=uniform"},
                      30);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(Has(r.output, "method: \"fedprox\"\n"));
  CHECK(Has(r.output, "  prox_mu: 0.01\n"));  // FedProx's mu, left unset
  CHECK(Has(r.output, "  density: 0.1\n"));   // set by the file: kept
}

TEST_CASE("shefl config names a bad key and exits 2") {
  TempDir dir;
  WriteFile(dir / "exp.yaml", "name: exp\nclients:\n  num_hpcs: 10\n");
  auto r = RunProcess({BinDir() + "/shefl", "config", dir / "exp.yaml"}, 30);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(Has(r.output, "exp.yaml:3: unknown key 'clients.num_hpcs' "
                      "(did you mean 'clients.num_hpc'?)"));

  auto range = RunProcess({BinDir() + "/shefl", "config", Quick(), "--set",
                           "rounds=0"}, 30);
  CHECK(range.exit_code == 2);
  CHECK(Has(range.output, "key 'rounds'"));

  auto method = RunProcess({BinDir() + "/shefl", "config", Quick(), "--set",
                            "method=fedavg"}, 30);
  CHECK(method.exit_code == 2);
  CHECK(Has(method.output, "--set model.num_models=1"));
}

TEST_CASE("shefl config usage errors and help") {
  auto help = RunProcess({BinDir() + "/shefl", "config", "--help"}, 30);
  CHECK(help.exit_code == 0);
  CHECK(Has(help.output, "usage: shefl config CONFIG"));
  auto none = RunProcess({BinDir() + "/shefl", "config"}, 30);
  CHECK(none.exit_code == 2);
  CHECK(Has(none.output, "needs a CONFIG"));
  auto flag = RunProcess({BinDir() + "/shefl", "config", Quick(), "--bogus"}, 30);
  CHECK(flag.exit_code == 2);
  CHECK(Has(flag.output, "unknown flag for config: --bogus"));
  auto overview = RunProcess({BinDir() + "/shefl", "--help"}, 30);
  CHECK(overview.exit_code == 0);
  CHECK(Has(overview.output, "  config CONFIG"));
}
