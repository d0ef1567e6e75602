// The coordinator killed with -9 fifty times, with error feedback on:
// half the kills at random moments, half at failpoints just before and
// after each step of the round's durable end (rounds.jsonl append, the
// checkpoint's write, fsync, rename, directory fsync). The daemons stay up
// and reconnect. The round never goes back, and the final models are the
// bytes an uninterrupted run reaches: no accepted update lost or applied
// twice, and no error-feedback residual counted twice.
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <random>
#include <thread>

#include "common/core/failpoint.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

constexpr int kRounds = 100;  // above what 50 kills can reach (about 1.3 rounds a cycle here)
constexpr int kKills = 50;

std::vector<std::string> Coordinator(const TempDir& dir, int port,
                                     const std::string& run, bool resume) {
  std::vector<std::string> argv = {
      BinDir() + "/shefl-coordinator", "--listen",
      "127.0.0.1:" + std::to_string(port), "--threads", "1", "--insecure"};
  if (resume) {
    argv.insert(argv.end(), {"--resume", run});
  } else {
    argv.insert(argv.end(), {"--config", dir / "c.yaml", "--out", run, "--set",
                             "rounds=" + std::to_string(kRounds)});
  }
  return argv;
}

struct Daemons {
  std::vector<int> pids;
  Daemons(const std::string& run, int port) {
    const char* ranges[] = {"0-3", "4-7"};
    for (int i = 0; i < 2; ++i) {
      const std::string name = "d" + std::to_string(i);
      pids.push_back(Spawn(
          {BinDir() + "/shefl-client", "--coordinator",
           "127.0.0.1:" + std::to_string(port), "--clients", ranges[i],
           "--name", name, "--out", run + "/daemons", "--threads", "1",
           "--max-backoff-s", "0.5", "--insecure"},
          run + "-" + name + ".log"));
    }
  }
  // Both exit 0 once the coordinator says the run is over.
  bool Finished() {
    bool ok = true;
    for (int& pid : pids) ok = WaitFor(pid, 60) == 0 && ok;
    pids.clear();
    return ok;
  }
  ~Daemons() {
    for (int pid : pids) {
      ::kill(-pid, SIGKILL);
      WaitFor(pid, 10);
    }
  }
};

std::vector<int> Accepted(const std::string& rounds_jsonl) {
  std::vector<int> out;
  for (const auto& line : ReadJsonl(rounds_jsonl))
    out.push_back(line["updates_accepted"].get<int>());
  return out;
}

// Starts the coordinator with SHEFL_FAILPOINT set to `failpoint` (none
// when empty); the child inherits the environment at fork.
int SpawnCoordinator(const std::vector<std::string>& argv,
                     const std::string& log, const std::string& failpoint) {
  if (failpoint.empty())
    ::unsetenv("SHEFL_FAILPOINT");
  else
    ::setenv("SHEFL_FAILPOINT", failpoint.c_str(), 1);
  const int pid = Spawn(argv, log);
  ::unsetenv("SHEFL_FAILPOINT");
  return pid;
}

TEST_CASE("fifty kill -9 of the coordinator with error feedback reach the uninterrupted models",
          "[faults]") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig("  error_feedback: true\n"));
  const std::string straight = dir / "straight", crashed = dir / "crashed";
  {
    const int port = FreePort();
    Daemons daemons(straight, port);
    const int c = SpawnCoordinator(Coordinator(dir, port, straight, false),
                                   dir / "straight.log", "");
    INFO(ReadFile(dir / "straight.log"));
    REQUIRE(WaitFor(c, 300) == 0);
    REQUIRE(daemons.Finished());
  }
  const int port = FreePort();
  Daemons daemons(crashed, port);
  std::mt19937 rng(20261123);
  std::uniform_real_distribution<double> delay(0.0, 0.4);
  int kills = 0, failpoint_kills = 0, last_k = 0;
  bool finished_early = false;
  for (int i = 0; i < kKills && !finished_early; ++i) {
    const std::string log = dir / ("c" + std::to_string(i) + ".log");
    // Cycle 0 ends on a durable round 1, so that every later start resumes.
    const bool at_failpoint = i % 2 == 0;
    const std::string fp =
        i == 0 ? "checkpoint.after_dir_fsync"
               : at_failpoint ? kFailpoints[(i / 2) % std::size(kFailpoints)] : "";
    const size_t lines_before = ReadJsonl(crashed + "/rounds.jsonl").size();
    const int c = SpawnCoordinator(Coordinator(dir, port, crashed, i > 0), log, fp);
    if (!at_failpoint) {
      // By progress, not by wall time: once this process has opened its
      // first round, a random moment inside it. A cycle then moves the
      // run on by a round at most, so fifty kills land before the end on
      // a fast machine as on a slow one (by time alone, a quiet machine
      // finished the run after some 30 kills).
      WaitUntil([&] { return ReadFile(log).find(" open: ") != std::string::npos; },
                60);
      std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
      ::kill(-c, SIGKILL);
    }
    const int code = WaitFor(c, 120);
    const std::string text = ReadFile(log);
    INFO("cycle " << i << " failpoint '" << fp << "'\n" << text);
    if (code == 0) {
      finished_early = true;  // the run ended before the kill landed
      break;
    }
    REQUIRE(code == -1);  // killed
    ++kills;
    if (at_failpoint) {
      CHECK_THAT(text, Catch::Contains("failpoint") && Catch::Contains(fp));
      ++failpoint_kills;
    }
    if (i > 0) {
      // Resumed from a checkpoint no older than the last one, and at most
      // the last recorded round is run again.
      const int k = ResumedAfter(text);
      if (k >= 0) {  // -1: killed before it had read its checkpoint
        CHECK(k >= last_k);
        CHECK(k + 1 >= static_cast<int>(lines_before));
        last_k = std::max(last_k, k);
      }
    }
  }
  std::printf("crash-loop: %d kills (%d at failpoints), resumed up to round %d of %d\n",
              kills, failpoint_kills, last_k, kRounds);
  CHECK_FALSE(finished_early);
  CHECK(kills == kKills);
  const int c = SpawnCoordinator(Coordinator(dir, port, crashed, true),
                                 dir / "final.log", "");
  INFO(ReadFile(dir / "final.log"));
  REQUIRE(WaitFor(c, 300) == 0);
  CHECK(daemons.Finished());

  const auto lines = ReadJsonl(crashed + "/rounds.jsonl");
  REQUIRE(lines.size() == static_cast<size_t>(kRounds));
  for (int r = 0; r < kRounds; ++r) CHECK(lines[r]["round"] == r + 1);
  CHECK(Accepted(crashed + "/rounds.jsonl") == Accepted(straight + "/rounds.jsonl"));
  const auto a = nlohmann::json::parse(ReadFile(straight + "/summary.json"));
  const auto b = nlohmann::json::parse(ReadFile(crashed + "/summary.json"));
  CHECK(a["model_sha256"] == b["model_sha256"]);
}

}  // namespace
}  // namespace shefl
