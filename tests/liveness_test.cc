// A daemon killed with -9 in the middle of a round (docs/DESIGN.md, "Trust
// and faults": a
// client that vanishes costs its round's update, nothing else): the
// launcher restarts it, it registers again under its certificate, takes
// back its clients and the open round's tasks, and the run finishes with
// every round recorded.
#include <signal.h>

#include <string>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("a daemon killed mid-round is restarted and the run finishes") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  const int launcher =
      Spawn({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons", "2",
             "--threads", "1", "--out", run, "--set", "rounds=6", "--set",
             "train.local_steps=300", "--set", "round_deadline_s=120"},
            dir / "launcher.log");
  REQUIRE(WaitUntil([&] { return ReadJsonl(run + "/rounds.jsonl").size() >= 2; },
                    240));
  const nlohmann::json endpoints = WaitForEndpoints(run, 2, 60);
  REQUIRE(endpoints.is_object());
  const int victim = endpoints["daemons"][1]["pid"].get<int>();
  // Round 3 is open and daemon-1 holds tasks of it (every round samples
  // clients of both daemons here: 5 of 8, 4 per daemon).
  REQUIRE(::kill(victim, SIGKILL) == 0);
  INFO(ReadFile(dir / "launcher.log"));
  REQUIRE(WaitFor(launcher, 400) == 0);

  const std::string out = ReadFile(dir / "launcher.log");
  CHECK_THAT(out, Catch::Contains("daemon-1 signal 9"));
  CHECK_THAT(out, Catch::Contains("restarting in 1 s (restart 1 of at most 5)"));
  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == 6);
  for (size_t i = 0; i < rounds.size(); ++i)
    CHECK(rounds[i]["round"].get<size_t>() == i + 1);
  const std::string clog = ReadFile(run + "/logs/coordinator.log");
  CHECK(Occurrences(clog, "registered daemon 'daemon-1'") == 2);
  CHECK(Occurrences(clog, "registered daemon 'daemon-0'") == 1);
  // The endpoints file names the restarted process.
  const auto after = nlohmann::json::parse(ReadFile(run + "/endpoints.json"));
  CHECK(after["daemons"][1]["pid"].get<int>() != victim);
  // Every round after the restart had all its updates.
  const auto& last = rounds.back();
  CHECK(last["updates_accepted"] == last["updates_expected"]);
}

TEST_CASE("SIGTERM during start-up ends the coordinator at once") {
  TempDir dir;
  // Five million synthetic test samples: seconds of start-up to land in.
  WriteFile(dir / "c.yaml",
            SyntheticConfig("data:\n  dataset: synthetic\n  synthetic_train: 1200\n"
                            "  synthetic_test: 5000000\n  synthetic_features: 16\n"
                            "  synthetic_classes: 4\n"));
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                       "--listen", "127.0.0.1:0", "--out", dir / "run",
                       "--insecure"},
                      dir / "c.log");
  // The --insecure warning is the first thing Create logs.
  REQUIRE(WaitUntil([&] { return ReadFile(dir / "c.log").find("WARNING") !=
                                 std::string::npos; },
                    60));
  ::kill(c, SIGTERM);
  INFO(ReadFile(dir / "c.log"));
  // Lost before: the coordinator went on to wait for daemons for ever.
  CHECK(WaitFor(c, 10) == 128 + SIGTERM);
  CHECK(ReadFile(dir / "c.log").find("waiting for clients") == std::string::npos);
}

}  // namespace
}  // namespace shefl
