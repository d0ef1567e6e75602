// Accounted bytes against what the kernel carried: the daemons reach the
// coordinator through a counting TCP relay on 127.0.0.1. The accounting
// (serialized messages + 5-byte gRPC headers) must never exceed the TCP
// payload, and HTTP/2 framing and headers may add at most 1% per direction
// (README's claim). The coordinator's /metrics, scraped once after the run
// (--metrics-linger-s keeps it up), must equal summary.json and
// rounds.jsonl value for value; a daemon's /metrics must agree with the
// coordinator's books and its own daemons/<name>.jsonl wherever a scrape
// can be placed without a race.
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

using Metrics = std::map<std::string, double>;

// The value of a series that must be exposed (NaN, which equals nothing,
// if it is not: the check goes on to report the others).
double Value(const Metrics& m, const std::string& series) {
  INFO("series " << series);
  CHECK(m.count(series) == 1u);
  auto it = m.find(series);
  return it == m.end() ? std::numeric_limits<double>::quiet_NaN() : it->second;
}

// The value of a series that may not be exposed yet (then -1).
double ValueOr(const Metrics& m, const std::string& series) {
  auto it = m.find(series);
  return it == m.end() ? -1 : it->second;
}

const std::string kDaemonUp = "shefl_client_bytes_total{direction=\"up\"}";
const std::string kDaemonDown = "shefl_client_bytes_total{direction=\"down\"}";

std::string Bytes(const std::string& direction, const std::string& tier) {
  return "shefl_bytes_total{direction=\"" + direction + "\",tier=\"" + tier +
         "\"}";
}

// Every byte a books line (daemons/<name>.jsonl or rounds.jsonl) counts
// upwards: each client's payload and control, and the daemon's own traffic.
uint64_t LineUp(const nlohmann::json& line) {
  uint64_t up = line["daemon_bytes"]["payload_up"].get<uint64_t>() +
                line["daemon_bytes"]["control_up"].get<uint64_t>();
  for (const auto& [client, c] : line["bytes_by_client"].items())
    up += c["payload_up"].get<uint64_t>() + c["control_up"].get<uint64_t>();
  return up;
}

// Kills the process groups of what a test spawned and did not reap, so a
// failed check (which leaves the test case early) leaves nothing running.
class Reaper {
 public:
  int Add(int pid) {
    pids_.push_back(pid);
    return pid;
  }
  // WaitFor, remembering that `pid` is gone.
  int Wait(int pid, double timeout_s) {
    pids_.erase(std::remove(pids_.begin(), pids_.end(), pid), pids_.end());
    return WaitFor(pid, timeout_s);
  }
  ~Reaper() {
    for (int pid : pids_) {
      ::kill(-pid, SIGKILL);
      WaitFor(pid, 10);
    }
  }

 private:
  std::vector<int> pids_;
};

// One scrape of a daemon during the run, with how many lines its books
// held just before it.
struct DaemonScrape {
  size_t lines_before;
  double up;
};

TEST_CASE("accounted bytes are within 1% of what TCP carried, and /metrics agrees with the results") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int grpc_port = FreePort(), metrics_port = FreePort();
  const int d0_metrics = FreePort();
  const std::string out = dir / "run";
  const std::string coordinator_log = dir / "coordinator.log";
  Reaper reaper;
  const int coordinator = reaper.Add(Spawn(
      {BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml", "--listen",
       "127.0.0.1:" + std::to_string(grpc_port), "--metrics-listen",
       "127.0.0.1:" + std::to_string(metrics_port), "--out", out, "--threads",
       "1", "--metrics-linger-s", "300", "--insecure"},
      coordinator_log));
  CountingRelay relay(grpc_port);
  const std::string via = "127.0.0.1:" + std::to_string(relay.port());
  const int d0 = reaper.Add(Spawn(
      {BinDir() + "/shefl-client", "--coordinator", via, "--clients", "0-3",
       "--name", "d0", "--out", out + "/daemons", "--threads", "1",
       "--metrics-listen", "127.0.0.1:" + std::to_string(d0_metrics),
       "--insecure"},
      dir / "d0.log"));
  auto logs = [&] {
    return "coordinator log:\n" + ReadFile(coordinator_log) + "\nd0 log:\n" +
           ReadFile(dir / "d0.log");
  };

  // d0 alone: it has registered and opened its feed, and the run waits for
  // d1's clients, so nothing moves. d0's counters must equal every byte
  // the coordinator has booked so far (all of it d0's control traffic).
  double d0_registration_up = 0;
  if (!WaitUntil(
          [&] {
            const Metrics c = ParseMetrics(HttpGet(metrics_port, "/metrics"));
            const Metrics d = ParseMetrics(HttpGet(d0_metrics, "/metrics"));
            d0_registration_up = ValueOr(d, kDaemonUp);
            return ValueOr(c, "shefl_clients_connected") == 4 &&
                   d0_registration_up > 0 &&
                   d0_registration_up == ValueOr(c, Bytes("up", "control")) &&
                   ValueOr(d, kDaemonDown) == ValueOr(c, Bytes("down", "control"));
          },
          120))
    FAIL("d0's /metrics never matched the coordinator's at rest\n" << logs());

  const int d1 = reaper.Add(Spawn({BinDir() + "/shefl-client", "--coordinator",
                                  via, "--clients", "4-7", "--name", "d1",
                                  "--out", out + "/daemons", "--threads", "1",
                                  "--insecure"},
                                 dir / "d1.log"));

  // The run is over when summary.json exists. Meanwhile scrape d0 as often
  // as the wait polls, noting how many of its round lines were written.
  std::vector<DaemonScrape> scrapes;
  const auto summary_exists = [&] {
    const size_t lines = ReadJsonl(out + "/daemons/d0.jsonl").size();
    const Metrics d = ParseMetrics(HttpGet(d0_metrics, "/metrics"));
    if (ValueOr(d, kDaemonUp) >= 0) scrapes.push_back({lines, d.at(kDaemonUp)});
    return std::filesystem::exists(out + "/summary.json");
  };
  if (!WaitUntil(summary_exists, 300)) FAIL("no summary.json\n" << logs());
  CHECK(reaper.Wait(d0, 60) == 0);
  CHECK(reaper.Wait(d1, 60) == 0);
  // The coordinator lingers: one scrape now sees the final values.
  const std::string final_text = HttpGet(metrics_port, "/metrics");
  INFO(logs());
  REQUIRE_FALSE(final_text.empty());
  const Metrics m = ParseMetrics(final_text);
  CHECK_THAT(ReadFile(coordinator_log),
             Catch::Contains("serving the final /metrics for 300 s"));
  // SIGTERM ends the linger at once (it would otherwise last 300 s).
  ::kill(coordinator, SIGTERM);
  CHECK(reaper.Wait(coordinator, 30) == 0);

  auto summary = nlohmann::json::parse(ReadFile(out + "/summary.json"));
  const auto rounds = ReadJsonl(out + "/rounds.jsonl");
  REQUIRE(rounds.size() == 3u);
  const auto& b = summary["bytes"];
  // shefl_bytes_total: payload by tier, control apart, equal to the books.
  for (const std::string d : {"up", "down"}) {
    INFO("direction " << d);
    CHECK(Value(m, Bytes(d, "hpc")) + Value(m, Bytes(d, "lpc")) ==
          b["payload_" + d].get<double>());
    CHECK(Value(m, Bytes(d, "control")) == b["control_" + d].get<double>());
  }
  CHECK(summary["total_bytes_up"] == b["payload_up"]);
  CHECK(summary["total_bytes_down"] == b["payload_down"]);
  uint64_t hpc_up = 0, lpc_up = 0;
  for (const auto& r : rounds) {
    hpc_up += r["bytes_up_by_tier"]["hpc"].get<uint64_t>();
    lpc_up += r["bytes_up_by_tier"]["lpc"].get<uint64_t>();
  }
  CHECK(Value(m, Bytes("up", "hpc")) == hpc_up);
  CHECK(Value(m, Bytes("up", "lpc")) == lpc_up);
  // The round, accuracies and update counts: the last line, and sums.
  const auto& last = rounds.back();
  CHECK(Value(m, "shefl_round") == 3);
  CHECK(Value(m, "shefl_round_duration_seconds_count") == 3);
  CHECK(Value(m, "shefl_clients_connected") == 0);  // the daemons are gone
  CHECK(Value(m, "shefl_ensemble_accuracy") ==
        Approx(last["ensemble_accuracy"].get<double>()).epsilon(1e-9));
  REQUIRE(last["model_accuracy"].size() == 3u);
  for (int i = 0; i < 3; ++i)
    CHECK(Value(m, "shefl_model_accuracy{model=\"" + std::to_string(i) + "\"}") ==
          Approx(last["model_accuracy"][i].get<double>()).epsilon(1e-9));
  for (const std::string result : {"accepted", "rejected", "late"}) {
    INFO("updates " << result);
    int64_t sum = 0;
    for (const auto& r : rounds) sum += r["updates_" + result].get<int64_t>();
    CHECK(Value(m, "shefl_updates_total{result=\"" + result + "\"}") == sum);
  }
  CHECK(Value(m, "shefl_updates_total{result=\"accepted\"}") == 3 * 9);

  // d0's counter against its books. Upward, d0 books nothing after its last
  // round line, and before round 1 only its registration (measured at rest
  // above), so its total is that plus its lines. A scrape is bounded below
  // by the lines written before it and above by the total; one taken after
  // the last line (if the poll caught d0 still alive) must equal it.
  const auto d0_lines = ReadJsonl(out + "/daemons/d0.jsonl");
  REQUIRE(d0_lines.size() == 3u);
  std::vector<double> after_line = {d0_registration_up};
  for (const auto& line : d0_lines) after_line.push_back(after_line.back() + LineUp(line));
  REQUIRE_FALSE(scrapes.empty());
  double previous = d0_registration_up;
  size_t at_end = 0;
  for (const DaemonScrape& s : scrapes) {
    INFO("scrape of d0 with " << s.lines_before << " lines written: " << s.up);
    CHECK(s.up >= previous);  // a counter
    CHECK(s.up >= after_line[s.lines_before]);
    CHECK(s.up <= after_line.back());
    if (s.lines_before == d0_lines.size()) {
      CHECK(s.up == after_line.back());
      ++at_end;
    }
    previous = s.up;
  }
  std::cout << "d0 scraped " << scrapes.size() << " times, " << at_end
            << " after its last line; its up total " << after_line.back()
            << "\n";
  // Upward, the daemons' books and the coordinator's agree round by round,
  // and together with the registrations make summary.json's total.
  uint64_t daemons_up = 0, rounds_up = 0;
  for (const char* name : {"d0", "d1"})
    for (const auto& line : ReadJsonl(out + "/daemons/" + name + ".jsonl"))
      daemons_up += LineUp(line);
  for (const auto& r : rounds) rounds_up += LineUp(r);
  CHECK(daemons_up == rounds_up);
  uint64_t up = b["payload_up"].get<uint64_t>() + b["control_up"].get<uint64_t>();
  // What no round holds is the registrations: d0's, measured above, and
  // d1's, the same messages but for the session id in the feed request
  // (its random suffix is 1 to 5 digits long).
  const double d1_registration_up = static_cast<double>(up - rounds_up) - d0_registration_up;
  CHECK(d1_registration_up >= d0_registration_up - 4);
  CHECK(d1_registration_up <= d0_registration_up + 4);

  // Against the kernel: accounting never exceeds what TCP carried, and
  // HTTP/2 framing and headers add at most 1% each way (README's claim).
  // The books count each client's model download as its own (logical);
  // a daemon fetched each version once for its 4 clients, so what crossed
  // the wire is the books with the downloads' physical bytes instead.
  uint64_t shared_up = 0, shared_down = 0;  // logical minus physical
  for (const auto& r : rounds) {
    const auto& dl = r["downloads"];
    shared_up += dl["logical"]["up"].get<uint64_t>() - dl["physical"]["up"].get<uint64_t>();
    shared_down += dl["logical"]["down"].get<uint64_t>() - dl["physical"]["down"].get<uint64_t>();
  }
  CHECK(shared_down > 0);  // the sharing happened
  up -= shared_up;
  const uint64_t down = b["payload_down"].get<uint64_t>() +
                        b["control_down"].get<uint64_t>() - shared_down;
  const double up_ratio = static_cast<double>(relay.bytes_up()) / up;
  const double down_ratio = static_cast<double>(relay.bytes_down()) / down;
  std::cout << "wire overhead: up " << relay.bytes_up() << " / " << up << " = "
            << up_ratio << ", down " << relay.bytes_down() << " / " << down
            << " = " << down_ratio << "\n";
  CHECK(up <= relay.bytes_up());
  CHECK(down <= relay.bytes_down());
  CHECK(up_ratio <= 1.01);
  CHECK(down_ratio <= 1.01);
}

}  // namespace
}  // namespace shefl
