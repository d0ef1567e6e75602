// train.stacking through real runs: `shefl run` with two daemons on 127.0.0.1
// trains each round's tasks as one stack per daemon
// (common/learn_stacked/cohort_train.h) and gives the run one task at a time
// gives, up to float rounding: the same uploads (every item sent, the same
// bytes within 1%: the positions top-k picks may move by a rounding difference)
// and the same accuracy within 2 points. A setting the stack cannot take is
// refused at start by its key.
#include <ATen/Functions.h>

#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/fed/config_load.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

struct Run {
  std::string out;
  std::vector<nlohmann::json> rounds;
  std::string daemon_log;
};

Run Launch(const TempDir& dir, const std::string& stacking) {
  const std::string cfg = dir / "c.yaml";
  WriteFile(cfg, SyntheticConfig());
  const std::string out = dir / stacking;
  auto r = RunProcess({BinDir() + "/shefl", "run", cfg, "--daemons", "2",
                       "--threads", "1", "--out", out, "--set", "rounds=3",
                       "--set", "train.stacking=" + stacking},
                      300);
  INFO(stacking << ": " << r.output);
  REQUIRE(r.exit_code == 0);
  return {out, ReadJsonl(out + "/rounds.jsonl"),
          ReadFile(out + "/logs/daemon-0.log")};
}

TEST_CASE("a run with its rounds stacked equals the run one task at a time") {
  TempDir dir;
  const Run off = Launch(dir, "off");
  const Run on = Launch(dir, "on");
  CHECK(on.daemon_log.find("each round's tasks as one stack") != std::string::npos);
  CHECK(off.daemon_log.find("tasks at once") != std::string::npos);
  REQUIRE(on.rounds.size() == 3);
  REQUIRE(off.rounds.size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    INFO("round " << i + 1);
    const nlohmann::json& a = on.rounds[i];
    const nlohmann::json& b = off.rounds[i];
    CHECK(a["updates_accepted"] == b["updates_accepted"]);
    CHECK(a["updates_accepted"].get<int64_t>() > 0);
    const double up_a = a["bytes_up"].get<double>(), up_b = b["bytes_up"].get<double>();
    CHECK(std::abs(up_a - up_b) <= 0.01 * up_b);
    CHECK(std::abs(a["ensemble_accuracy"].get<double>() -
                   b["ensemble_accuracy"].get<double>()) <= 0.02);
  }
  // Training moved the models: the last round beats chance (4 classes).
  CHECK(on.rounds[2]["ensemble_accuracy"].get<double>() > 0.4);
}

TEST_CASE("train.stacking: on with what the stack cannot take fails at start") {
  const std::string yaml = SyntheticConfig();
  auto resnet = ParseConfigWithOverrides(
      yaml, "t.yaml", {"train.stacking=on", "model.name=resnet18"});
  REQUIRE_FALSE(resnet.ok());
  CHECK(std::string(resnet.status().message()).find("train.stacking") !=
        std::string::npos);
  auto adam = ParseConfigWithOverrides(
      yaml, "t.yaml", {"train.stacking=on", "train.optimizer=adam"});
  REQUIRE_FALSE(adam.ok());
  CHECK(std::string(adam.status().message()).find("SGD") != std::string::npos);
  auto bad = ParseConfigWithOverrides(yaml, "t.yaml", {"train.stacking=maybe"});
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("train.stacking") !=
        std::string::npos);
  CHECK(ParseConfigWithOverrides(yaml, "t.yaml", {"train.stacking=on"}).ok());
  // auto with a model that cannot stack is fine: it trains one by one.
  CHECK(ParseConfigWithOverrides(yaml, "t.yaml",
                                 {"model.name=resnet18"}).ok());
}

}  // namespace
}  // namespace shefl
