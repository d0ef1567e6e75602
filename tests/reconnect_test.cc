// Faults between real processes: daemons that come up before the
// coordinator, and a daemon killed mid-run and started again.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

std::vector<std::string> Coordinator(const TempDir& dir, int port,
                                     const std::string& set = "rounds=3") {
  return {BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
          "--listen", "127.0.0.1:" + std::to_string(port), "--out",
          dir / "run", "--threads", "1", "--set", set, "--insecure"};
}

std::vector<std::string> Daemon(const TempDir& dir, int port,
                                const std::string& clients,
                                const std::string& name) {
  return {BinDir() + "/shefl-client", "--coordinator",
          "127.0.0.1:" + std::to_string(port), "--clients", clients, "--name",
          name, "--out", dir / "run/daemons", "--threads", "1", "--insecure"};
}

TEST_CASE("daemons started before the coordinator connect when it comes up") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  const int d = Spawn(Daemon(dir, port, "0-7", "early"), dir / "d.log");
  // The coordinator starts once the daemon has failed and is backing off.
  REQUIRE(WaitUntil(
      [&] { return ReadFile(dir / "d.log").find("reconnecting") != std::string::npos; },
      120));
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
  REQUIRE(WaitUntil([&] { return !ReadJsonl(dir / "run/rounds.jsonl").empty(); },
                    240));
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

// The "reconnecting in X s" delays a daemon logs, in order; with `why`
// ("unreachable", "went away") only those that follow it on their line.
std::vector<double> ReconnectDelays(const std::string& log,
                                    const std::string& why = "") {
  std::vector<double> out;
  const std::string mark = why.empty() ? "reconnecting in "
                                       : why + "; reconnecting in ";
  for (size_t at = log.find(mark); at != std::string::npos;
       at = log.find(mark, at + 1))
    out.push_back(std::strtod(log.c_str() + at + mark.size(), nullptr));
  return out;
}

TEST_CASE("a daemon that cannot reach the coordinator backs off, doubling to the cap") {
  TempDir dir;
  const int port = FreePort();  // nothing listens there
  std::vector<std::string> argv = Daemon(dir, port, "0-3", "lonely");
  argv.insert(argv.end(), {"--max-backoff-s", "2"});
  const int d = Spawn(argv, dir / "d.log");
  // 0.25 + 0.5 + 1 + 2 + 2 s nominal, at most 1.5x that with jitter.
  const bool six = WaitUntil(
      [&] { return ReconnectDelays(ReadFile(dir / "d.log")).size() >= 6; }, 120);
  ::kill(d, SIGTERM);
  CHECK(WaitFor(d, 30) == 0);
  const std::string log = ReadFile(dir / "d.log");
  INFO(log);
  REQUIRE(six);
  const std::vector<double> delays = ReconnectDelays(log);
  for (size_t i = 0; i < 6; ++i) {
    const double base = std::min(0.25 * (1 << i), 2.0);
    INFO("attempt " << i + 1 << ": base " << base << " s");
    // Logged with two decimals: allow the rounding.
    CHECK(delays[i] >= 0.5 * base - 0.005);
    CHECK(delays[i] <= 1.5 * base + 0.005);
  }
  // The early delays cannot overlap: each band lies above the last.
  CHECK(delays[3] > delays[0]);
  CHECK(delays[4] > delays[1]);
}

TEST_CASE("a daemon whose session ran starts its backoff over") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  std::vector<std::string> argv = Daemon(dir, port, "0-7", "patient");
  argv.insert(argv.end(), {"--max-backoff-s", "1"});
  const int d = Spawn(argv, dir / "d.log");
  // Three failed attempts take the base from 0.25 s to its cap of 1 s: a
  // fourth delay would be at least 0.5 s.
  REQUIRE(WaitUntil(
      [&] { return ReconnectDelays(ReadFile(dir / "d.log"), "unreachable").size() >= 3; },
      120));
  const int c = Spawn(Coordinator(dir, port, "rounds=1000"), dir / "c.log");
  // The daemon registered and prepared its clients: a session ran. Then
  // the coordinator dies without a word.
  const bool ready = WaitUntil(
      [&] { return ReadFile(dir / "d.log").find(" ready on ") != std::string::npos; },
      120);
  ::kill(-c, SIGKILL);
  WaitFor(c, 30);
  const bool noticed = WaitUntil(
      [&] { return !ReconnectDelays(ReadFile(dir / "d.log"), "went away").empty(); },
      120);
  ::kill(d, SIGTERM);
  CHECK(WaitFor(d, 30) == 0);
  const std::string log = ReadFile(dir / "d.log");
  INFO(log);
  REQUIRE(ready);
  REQUIRE(noticed);
  const auto grown = ReconnectDelays(log, "unreachable");
  REQUIRE(grown.size() >= 3u);
  CHECK(grown[2] >= 0.5 - 0.005);
  // Back to the first band, 0.25 s x [0.5, 1.5), not the cap's [0.5, 1.5).
  const double after = ReconnectDelays(log, "went away").front();
  CHECK(after >= 0.125 - 0.005);
  CHECK(after <= 0.375 + 0.005);
}

// The daemon's side of a round line: its daemon_bytes control up.
uint64_t ControlUp(const nlohmann::json& line) {
  return line["daemon_bytes"]["control_up"].get<uint64_t>();
}

TEST_CASE("a daemon heartbeats into a silent feed and both sides book it") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  // Rounds of several seconds with no feed message inside them.
  const int c = Spawn(Coordinator(dir, port, "train.local_steps=1500"), dir / "c.log");
  std::vector<std::string> argv = Daemon(dir, port, "0-7", "beating");
  argv.insert(argv.end(), {"--heartbeat-s", "0.3"});
  const int d = Spawn(argv, dir / "d.log");
  INFO(ReadFile(dir / "c.log") << ReadFile(dir / "d.log"));
  REQUIRE(WaitFor(c, 300) == 0);
  REQUIRE(WaitFor(d, 60) == 0);
  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  const auto lines = ReadJsonl(dir / "run/daemons/beating.jsonl");
  REQUIRE(rounds.size() == 3u);
  REQUIRE(lines.size() == 3u);
  // Both sides book a heartbeat under the round the reply names. One that
  // crosses a round's end by a millisecond can land in the coordinator's
  // line and miss the daemon's (written on round_end); allow one.
  uint64_t beats_up = 0, daemon_up = 0;
  for (size_t i = 0; i < rounds.size(); ++i) {
    beats_up += ControlUp(rounds[i]);
    daemon_up += ControlUp(lines[i]);
  }
  CHECK(beats_up > 0);
  CHECK(daemon_up <= beats_up);
  CHECK(beats_up - daemon_up <= 64);
  std::printf("heartbeat: %llu bytes up over 3 rounds of %.1f s\n",
              static_cast<unsigned long long>(beats_up),
              rounds[1]["wall_seconds"].get<double>());
}

TEST_CASE("a daemon's healthz and shefl_client_state follow its connection") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort(), metrics = FreePort();
  std::vector<std::string> argv = Daemon(dir, port, "0-6", "watched");
  argv.insert(argv.end(), {"--metrics-listen",
                           "127.0.0.1:" + std::to_string(metrics),
                           "--max-backoff-s", "0.5"});
  const int d = Spawn(argv, dir / "d.log");
  // No coordinator yet: disconnected, and /healthz says 503.
  int status = 0;
  REQUIRE(WaitUntil([&] { return !HttpGet(metrics, "/healthz", &status).empty(); }, 60));
  CHECK(status == 503);
  CHECK_THAT(HttpGet(metrics, "/healthz"), Catch::Contains("disconnected"));
  auto m = ParseMetrics(HttpGet(metrics, "/metrics"));
  CHECK(m["shefl_client_state{state=\"disconnected\"}"] == 1);
  CHECK(m["shefl_client_state{state=\"idle\"}"] == 0);
  // With a coordinator that still waits for client 7: idle, for as long as
  // the test looks. (Observing idle between rounds raced: it lasts ms.)
  const int c = Spawn(Coordinator(dir, port, "train.local_steps=1500"), dir / "c.log");
  std::string body;
  REQUIRE(WaitUntil([&] {
    int code = 0;
    body = HttpGet(metrics, "/healthz", &code);
    return code == 200;
  }, 120));
  CHECK(body == "idle\n");
  const auto idle = ParseMetrics(HttpGet(metrics, "/metrics"));
  CHECK(idle.at("shefl_client_state{state=\"idle\"}") == 1);
  CHECK(idle.at("shefl_client_state{state=\"disconnected\"}") == 0);
  // Client 7's daemon lets round 1 open: training, one state at a time.
  const int d7 = Spawn(Daemon(dir, port, "7", "last"), dir / "d7.log");
  std::map<std::string, double> during;
  const bool training = WaitUntil([&] {
    int code = 0;
    if (HttpGet(metrics, "/healthz", &code) != "training\n") return false;
    during = ParseMetrics(HttpGet(metrics, "/metrics"));
    return during.count("shefl_client_state{state=\"training\"}") &&
           during["shefl_client_state{state=\"training\"}"] == 1;
  }, 120);
  INFO(ReadFile(dir / "c.log") << ReadFile(dir / "d.log"));
  REQUIRE(training);
  double sum = 0;
  for (const char* s : {"disconnected", "idle", "training"})
    sum += during.at(std::string("shefl_client_state{state=\"") + s + "\"}");
  CHECK(sum == 1);  // exactly one state at a time
  CHECK(WaitFor(c, 300) == 0);
  CHECK(WaitFor(d7, 60) == 0);
  CHECK(WaitFor(d, 60) == 0);
}

}  // namespace
}  // namespace shefl
