// Tasks go to every daemon on its own feed (a stream held by its own
// server thread), so a daemon that stops reading holds back only its own
// clients. Here one daemon is stopped (SIGSTOP: its process and socket go
// quiet) for two rounds: the other daemons' updates must all arrive early
// in those rounds (rounds.jsonl `daemon_done_seconds`), while the round
// itself waits for the stopped one until its deadline. Real coordinator
// and daemons on 127.0.0.1.
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("a stopped daemon holds back no other daemon's tasks") {
  TempDir dir;
  // 12 clients on 3 daemons, every client every round (4 HPCs x 3 members
  // + 8 LPCs), so each round needs all three daemons.
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config",
                       dir / "c.yaml", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--out",
                       dir / "run", "--threads", "1", "--insecure", "--set",
                       "clients.num_clients=12", "--set", "clients.num_hpc=4",
                       "--set", "clients.per_round_hpc=4", "--set",
                       "clients.per_round_lpc=8", "--set",
                       "clients.staller_strikes=0", "--set", "rounds=4", "--set",
                       "round_deadline_s=4"},
                      dir / "c.log");
  std::vector<int> daemons;
  for (int i = 0; i < 3; ++i)
    daemons.push_back(Spawn(
        {BinDir() + "/shefl-client", "--coordinator",
         "127.0.0.1:" + std::to_string(port), "--clients",
         std::to_string(4 * i) + "-" + std::to_string(4 * i + 3), "--name",
         "d" + std::to_string(i), "--out", dir / "run/daemons", "--threads",
         "1", "--insecure"},
        dir / ("d" + std::to_string(i) + ".log")));
  // Stop d0 once round 1 is recorded, until round 3 is.
  const std::string rounds = dir / "run/rounds.jsonl";
  auto lines = [&] {
    return std::filesystem::exists(rounds) ? ReadJsonl(rounds).size() : 0u;
  };
  REQUIRE(WaitUntil([&] { return lines() >= 1; }, 120));
  kill(daemons[0], SIGSTOP);  // NOLINT: the test's own child
  const bool two_more = WaitUntil([&] { return lines() >= 3; }, 120);
  kill(daemons[0], SIGCONT);
  const int rc = WaitFor(c, 120);
  for (int pid : daemons) WaitFor(pid, 30);
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(two_more);
  REQUIRE(rc == 0);
  const auto all = ReadJsonl(rounds);
  REQUIRE(all.size() == 4);
  // The rounds that opened with d0 stopped (round 3 at least; round 2 may
  // have had d0's updates before it stopped, and the keepalive may drop
  // d0 in a later one, whose cohort then leaves its clients out).
  int stopped_rounds = 0;
  for (const auto& line : all) {
    const auto& done = line["daemon_done_seconds"];
    if (done.contains("d0") || line["updates_expected"] != 20) continue;
    ++stopped_rounds;
    INFO("round " << line["round"] << ": " << line.dump());
    REQUIRE(done.contains("d1"));
    REQUIRE(done.contains("d2"));
    // The others finished in a fraction of the deadline the round waited.
    CHECK(done["d1"].get<double>() < 2.0);
    CHECK(done["d2"].get<double>() < 2.0);
    CHECK(line["wall_seconds"].get<double>() >= 3.8);
    // d0 hosts the 4 HPCs (3 members each): the 8 LPC updates of d1 and
    // d2 came, all of them.
    CHECK(line["updates_accepted"] == 8);
  }
  CHECK(stopped_rounds >= 1);
  // Round 1 ran with all three.
  CHECK(all[0]["daemon_done_seconds"].size() == 3);
}

}  // namespace
}  // namespace shefl
