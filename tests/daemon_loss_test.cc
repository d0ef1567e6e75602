// Daemons that leave for good cost their clients, not the run
// (server/state/lost_daemons.h), with a real coordinator and real daemons
// on 127.0.0.1: a daemon killed -9 with restarts off, a daemon refused and
// gone, and a federation that falls below its quorum, gives up, and is
// resumed once its daemons are back.
#include <signal.h>

#include <set>
#include <string>
#include <vector>

#include "tests/local_processes.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

std::set<int64_t> Ids(const nlohmann::json& a) {
  std::set<int64_t> out;
  for (const auto& v : a) out.insert(v.get<int64_t>());
  return out;
}

bool Meets(const std::set<int64_t>& a, const std::set<int64_t>& b) {
  for (int64_t x : a)
    if (b.count(x)) return true;
  return false;
}

int StartDaemon(const TempDir& dir, int port, const std::string& name,
                const std::string& clients,
                const std::vector<std::string>& extra = {}) {
  return Spawn(DaemonArgv(dir, port, name, clients, extra), dir / (name + ".log"));
}

// The one loss summary.json books, checked against the rounds: from its
// round on, the lost clients are missing and never sampled.
std::set<int64_t> CheckOneLoss(const std::string& run, const std::string& daemon,
                               size_t rounds_planned) {
  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == rounds_planned);
  const auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  INFO(summary.dump());
  REQUIRE(summary["clients_lost"].size() == 1);
  const nlohmann::json& loss = summary["clients_lost"][0];
  CHECK(loss["daemon"] == daemon);
  CHECK(loss["back_round"].is_null());
  CHECK(loss["gone_at"].get<std::string>().back() == 'Z');
  const std::set<int64_t> lost = Ids(loss["clients"]);
  REQUIRE_FALSE(lost.empty());
  const int64_t from = loss["round"].get<int64_t>();
  CHECK(from >= 2);
  for (const auto& line : rounds) {
    INFO(line.dump());
    const int64_t r = line["round"].get<int64_t>();
    // Whatever a round gave up on was the lost daemon's.
    for (int64_t c : Ids(line["clients_abandoned"])) CHECK(lost.count(c) == 1);
    if (r < from) continue;
    CHECK_FALSE(Meets(Ids(line["participants"]), lost));
    CHECK(line["clients_missing"].get<size_t>() == lost.size());
    CHECK(line["daemons_missing"] == nlohmann::json::array({daemon}));
  }
  CHECK(rounds.front()["clients_missing"] == 0);
  return lost;
}

TEST_CASE("a daemon killed -9 with restarts off costs its clients, and the run finishes") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  const int launcher = Spawn(
      {BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons", "3", "--threads",
       "1", "--max-restarts", "0", "--out", run, "--set", "rounds=6", "--set",
       "train.local_steps=300", "--set", "round_deadline_s=120", "--set",
       "clients.lost_after_s=2"},
      dir / "launcher.log");
  REQUIRE(WaitUntil([&] { return ReadJsonl(run + "/rounds.jsonl").size() >= 2; },
                    240));
  const nlohmann::json endpoints = WaitForEndpoints(run, 3, 60);
  REQUIRE(endpoints.is_object());
  REQUIRE(::kill(endpoints["daemons"][1]["pid"].get<int>(), SIGKILL) == 0);
  INFO(ReadFile(dir / "launcher.log"));
  REQUIRE(WaitFor(launcher, 400) == 0);

  const std::string out = ReadFile(dir / "launcher.log");
  CHECK_THAT(out, Catch::Contains("daemon-1 signal 9"));
  CHECK_THAT(out, Catch::Contains("after 0 restarts; giving up on it: the run "
                                  "goes on without it"));
  const std::string clog = ReadFile(run + "/logs/coordinator.log");
  CHECK_THAT(clog, Catch::Contains("goes on without daemon 'daemon-1'"));
  CheckOneLoss(run, "daemon-1", 6);
  // No round waited for its deadline (120 s) on the dead daemon.
  for (const auto& line : ReadJsonl(run + "/rounds.jsonl"))
    CHECK(line["wall_seconds"].get<double>() < 60);
  // The help says what this test saw.
  const auto help = RunProcess({BinDir() + "/shefl", "run", "--help"}, 30);
  CHECK_THAT(help.output, Catch::Contains("0: never; the run goes on without"));
  CHECK_THAT(help.output, !Catch::Contains("a dead daemon ends the run"));
}

TEST_CASE("a daemon refused for a poisoned update that then leaves does not stop the run") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  const int c = Spawn(CoordinatorArgv(dir, port, {"rounds=5", "round_deadline_s=60",
                                              "clients.lost_after_s=2",
                                              "train.local_steps=100"}),
                      dir / "c.log");
  const int honest = StartDaemon(dir, port, "honest", "0-2,4-6");
  const int liar = StartDaemon(dir, port, "liar", "3,7", {"--adversary", "huge"});
  REQUIRE(WaitUntil([&] {
    return ReadFile(dir / "c.log").find("beyond robust.max_abs") != std::string::npos;
  }, 180));
  ::kill(-liar, SIGTERM);
  WaitFor(liar, 30);  // gone: its feed closes
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(WaitFor(c, 300) == 0);
  CHECK(WaitFor(honest, 60) == 0);
  CHECK(CheckOneLoss(dir / "run", "liar", 5) == std::set<int64_t>{3, 7});
}

TEST_CASE("below the quorum the coordinator waits, gives up, and --resume goes on") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  int c = Spawn(CoordinatorArgv(dir, port, {"rounds=5", "train.local_steps=100",
                                        "clients.min_connected=6",
                                        "clients.lost_after_s=1",
                                        "clients.give_up_after_s=4"}),
                dir / "c.log");
  const int d0 = StartDaemon(dir, port, "d0", "0-3");
  int d1 = StartDaemon(dir, port, "d1", "4-7");
  REQUIRE(WaitUntil([&] { return ReadJsonl(dir / "run/rounds.jsonl").size() >= 2; },
                    240));
  ::kill(-d1, SIGKILL);
  WaitFor(d1, 10);
  // 4 of 8 connected, below the quorum of 6: it waits, says so, gives up.
  const int rc = WaitFor(c, 120);
  const std::string log = ReadFile(dir / "c.log");
  INFO(log);
  CHECK(rc == 1);
  CHECK_THAT(log, Catch::Contains("4/8 connected, 4 missing (need 6, the quorum; "
                                  "giving up after 4 s)"));
  CHECK_THAT(log, Catch::Contains("clients.give_up_after_s: waited 4 s before round"));
  CHECK_THAT(log, Catch::Contains("--resume " + (dir / "run")));
  const size_t done = ReadJsonl(dir / "run/rounds.jsonl").size();
  CHECK(done >= 2);
  CHECK(done < 5);

  // The daemons are back (d0 reconnects by itself): the run goes on.
  c = Spawn({BinDir() + "/shefl-coordinator", "--resume", dir / "run", "--listen",
             "127.0.0.1:" + std::to_string(port), "--threads", "1", "--insecure"},
            dir / "c2.log");
  d1 = StartDaemon(dir, port, "d1", "4-7");
  INFO(ReadFile(dir / "c2.log"));
  REQUIRE(WaitFor(c, 300) == 0);
  CHECK(WaitFor(d0, 60) == 0);
  CHECK(WaitFor(d1, 60) == 0);
  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(rounds.size() == 5);
  for (size_t i = 0; i < rounds.size(); ++i)
    CHECK(rounds[i]["round"].get<size_t>() == i + 1);
  CHECK(rounds.back()["clients_missing"] == 0);
}

}  // namespace
}  // namespace shefl
