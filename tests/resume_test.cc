// kill -9 of the coordinator mid-run, then `shefl run --resume`: the run
// ends with the same models as one that was never interrupted.
#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/test_support.h"

namespace shefl {
namespace {

using namespace testing;

std::vector<std::string> Launch(const TempDir& dir, const std::string& out) {
  return {BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons", "2",
          "--threads", "1", "--out", out, "--set", "rounds=4",
          "--set", "train.local_steps=300"};
}

TEST_CASE("a coordinator killed with -9 resumes to the same models") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  auto straight = RunProcess(Launch(dir, dir / "straight"), 300);
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);

  const std::string run = dir / "killed";
  const int launcher = Spawn(Launch(dir, run), dir / "launcher.log");
  for (int i = 0; i < 3000 && ReadJsonl(run + "/rounds.jsonl").size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto endpoints = nlohmann::json::parse(ReadFile(run + "/endpoints.json"));
  ::kill(endpoints["coordinator_pid"].get<int>(), SIGKILL);
  CHECK(WaitFor(launcher, 60) == 1);  // the launcher reports the failure
  REQUIRE(ReadJsonl(run + "/rounds.jsonl").size() < 4u);

  auto resumed = RunProcess({BinDir() + "/shefl", "run", "--resume", run,
                             "--threads", "1"},
                            300);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  auto a = nlohmann::json::parse(ReadFile(dir / "straight/summary.json"));
  auto b = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  CHECK(a["model_sha256"] == b["model_sha256"]);
  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == 4u);
  for (int i = 0; i < 4; ++i) CHECK(rounds[i]["round"] == i + 1);
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("SIGTERM stops the coordinator cleanly: checkpoint, summary, exit 0") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  const std::string run = dir / "run";
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config",
                       dir / "c.yaml", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--out", run,
                       "--threads", "1", "--set", "rounds=50", "--set",
                       "train.local_steps=200"},
                      dir / "c.log");
  const int d = Spawn({BinDir() + "/shefl-client", "--coordinator",
                       "127.0.0.1:" + std::to_string(port), "--clients", "0-7",
                       "--out", run + "/daemons", "--threads", "1"},
                      dir / "d.log");
  for (int i = 0; i < 3000 && ReadJsonl(run + "/rounds.jsonl").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(c, SIGTERM);
  INFO(ReadFile(dir / "c.log"));
  CHECK(WaitFor(c, 60) == 0);
  CHECK(WaitFor(d, 30) == 0);  // told to stop, not left hanging
  auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  const int rounds = summary["rounds"];
  CHECK(rounds >= 1);
  CHECK(rounds < 50);
  CHECK(ReadJsonl(run + "/rounds.jsonl").size() == static_cast<size_t>(rounds));
  CHECK(std::filesystem::exists(run + "/checkpoints/latest.ckpt"));
}

}  // namespace
}  // namespace shefl
