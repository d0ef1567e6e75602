// Faults between real processes: daemons that come up before the
// coordinator, and a daemon killed mid-run and started again.
#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "tests/test_support.h"

namespace shefl {
namespace {

using namespace testing;

std::vector<std::string> Coordinator(const TempDir& dir, int port,
                                     const std::string& set = "rounds=3") {
  return {BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
          "--listen", "127.0.0.1:" + std::to_string(port), "--out",
          dir / "run", "--threads", "1", "--set", set};
}

std::vector<std::string> Daemon(const TempDir& dir, int port,
                                const std::string& clients,
                                const std::string& name) {
  return {BinDir() + "/shefl-client", "--coordinator",
          "127.0.0.1:" + std::to_string(port), "--clients", clients, "--name",
          name, "--out", dir / "run/daemons", "--threads", "1"};
}

TEST_CASE("daemons started before the coordinator connect when it comes up") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  const int d = Spawn(Daemon(dir, port, "0-7", "early"), dir / "d.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int c = Spawn(Coordinator(dir, port), dir / "c.log");
  INFO(ReadFile(dir / "c.log") << ReadFile(dir / "d.log"));
  CHECK(WaitFor(c, 300) == 0);
  CHECK(WaitFor(d, 30) == 0);
  CHECK_THAT(ReadFile(dir / "d.log"), Catch::Contains("reconnecting"));
  CHECK(ReadJsonl(dir / "run/rounds.jsonl").size() == 3u);
}

TEST_CASE("a daemon killed mid-run is started again and the run completes") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig("round_deadline_s: 20\n"
                                            "rounds: 4\n"));
  const int port = FreePort();
  // Long enough rounds that the kill lands mid-run.
  const int c = Spawn(Coordinator(dir, port, "train.local_steps=400"),
                      dir / "c.log");
  const int d0 = Spawn(Daemon(dir, port, "0-3", "d0"), dir / "d0.log");
  int d1 = Spawn(Daemon(dir, port, "4-7", "d1"), dir / "d1.log");
  // Kill d1 once the first round is recorded, then bring it back.
  for (int i = 0; i < 1200 && ReadJsonl(dir / "run/rounds.jsonl").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(ReadJsonl(dir / "run/rounds.jsonl").size() >= 1u);
  ::kill(-d1, SIGKILL);
  WaitFor(d1, 10);
  d1 = Spawn(Daemon(dir, port, "4-7", "d1"), dir / "d1-again.log");
  INFO(ReadFile(dir / "c.log"));
  CHECK(WaitFor(c, 300) == 0);
  CHECK(WaitFor(d0, 30) == 0);
  CHECK(WaitFor(d1, 30) == 0);
  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(rounds.size() == 4u);
  int accepted = 0;
  for (const auto& r : rounds) accepted += r["updates_accepted"].get<int>();
  CHECK(accepted >= 3 * 9);  // at most one round lost updates
  // d1 registered twice: at start and after its restart.
  const std::string log = ReadFile(dir / "c.log");
  size_t registrations = 0;
  for (size_t at = log.find("registered daemon 'd1'"); at != std::string::npos;
       at = log.find("registered daemon 'd1'", at + 1))
    ++registrations;
  CHECK(registrations == 2u);
}

}  // namespace
}  // namespace shefl
