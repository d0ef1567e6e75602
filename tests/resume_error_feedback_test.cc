// Everything killed at once with error feedback on: `shefl run`, its
// coordinator and its daemons get SIGKILL together mid-run, and the run is
// resumed over three daemons where it had two. The daemons' residuals are
// on disk before each upload and named by client in a folder the daemons
// share, so the resumed run reaches the uninterrupted run's models. (In
// plaintext: under mutual TLS each daemon's certificate owns its clients,
// and another packing would be refused by design.)
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

constexpr int kRounds = 6;

std::vector<std::string> Launch(const TempDir& dir, const std::string& out) {
  return {BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons", "2",
          "--threads", "1", "--insecure", "--out", out, "--set",
          "rounds=" + std::to_string(kRounds), "--set", "train.local_steps=200"};
}

bool Alive(int pid) { return ::kill(pid, 0) == 0; }

TEST_CASE("error feedback: launcher, coordinator and daemons killed together resume to the same models on another packing") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig("  error_feedback: true\n"));
  auto straight = RunProcess(Launch(dir, dir / "straight"), 300);
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);

  const std::string run = dir / "killed";
  const int launcher = Spawn(Launch(dir, run), dir / "launcher.log");
  const nlohmann::json endpoints = WaitForEndpoints(run, 2, 60);
  REQUIRE(endpoints.is_object());
  REQUIRE(WaitUntil([&] { return ReadJsonl(run + "/rounds.jsonl").size() >= 2; },
                    240));
  // The launcher's children share its process group (Spawn made one).
  REQUIRE(::kill(-launcher, SIGKILL) == 0);
  WaitFor(launcher, 30);
  std::vector<int> pids = {endpoints["coordinator_pid"].get<int>()};
  for (const auto& d : endpoints["daemons"]) pids.push_back(d["pid"].get<int>());
  REQUIRE(WaitUntil(
      [&] {
        for (int pid : pids)
          if (Alive(pid)) return false;
        return true;
      },
      30));
  const size_t lines_before = ReadJsonl(run + "/rounds.jsonl").size();
  REQUIRE(lines_before < static_cast<size_t>(kRounds));
  // Staged residuals are on disk, one file per client, model and round.
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(
           run + "/daemons/state/residuals"))
    files += e.path().extension() == ".ef";
  CHECK(files > 0u);

  auto resumed = RunProcess({BinDir() + "/shefl", "run", "--resume", run,
                             "--threads", "1", "--daemons", "3"},
                            300);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(ReadJsonl(run + "/rounds.jsonl").size() == static_cast<size_t>(kRounds));
  // Three daemons now: clients moved, and the moved ones found theirs.
  const nlohmann::json after =
      nlohmann::json::parse(ReadFile(run + "/endpoints.json"));
  CHECK(after["daemons"].size() == 3u);
  std::string daemon_logs;
  for (const auto& e : std::filesystem::directory_iterator(run + "/logs"))
    daemon_logs += ReadFile(e.path().string());
  CHECK(daemon_logs.find("error-feedback residuals restored") !=
        std::string::npos);

  auto a = nlohmann::json::parse(ReadFile(dir / "straight/summary.json"));
  auto b = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  CHECK(a["model_sha256"] == b["model_sha256"]);
}

}  // namespace
}  // namespace shefl
