// Accounted bytes against what the kernel carried: the daemons reach the
// coordinator through a counting TCP relay on 127.0.0.1. The accounting
// (serialized messages + 5-byte gRPC headers) must never exceed the TCP
// payload, and HTTP/2 framing and headers may add at most 1%. The
// coordinator's /metrics, scraped once after the run (it lingers), must
// equal summary.json and rounds.jsonl value for value.
#include <signal.h>

#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <iostream>
#include <thread>

#include "tests/test_support.h"

namespace shefl {
namespace {

using namespace testing;

double Metric(const std::map<std::string, double>& m, const std::string& name) {
  auto it = m.find(name);
  return it == m.end() ? 0 : it->second;  // a series never touched is 0
}

TEST_CASE("accounted bytes are within 1% of what TCP carried, and /metrics agrees with the results") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int grpc_port = FreePort(), metrics_port = FreePort();
  const int daemon_metrics = FreePort();
  const std::string out = dir / "run";
  const int coordinator = Spawn(
      {BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml", "--listen",
       "127.0.0.1:" + std::to_string(grpc_port), "--metrics-listen",
       "127.0.0.1:" + std::to_string(metrics_port), "--out", out, "--threads",
       "1", "--metrics-linger-s", "300"},
      dir / "coordinator.log");
  CountingRelay relay(grpc_port);
  const std::string via = "127.0.0.1:" + std::to_string(relay.port());
  const int d0 = Spawn({BinDir() + "/shefl-client", "--coordinator", via,
                        "--clients", "0-3", "--name", "d0", "--out",
                        out + "/daemons", "--threads", "1", "--metrics-listen",
                        "127.0.0.1:" + std::to_string(daemon_metrics)},
                       dir / "d0.log");
  const int d1 = Spawn({BinDir() + "/shefl-client", "--coordinator", via,
                        "--clients", "4-7", "--name", "d1", "--out",
                        out + "/daemons", "--threads", "1"},
                       dir / "d1.log");
  INFO(ReadFile(dir / "coordinator.log"));

  // A daemon's counters while it runs: it books a round's bytes before it
  // writes that round's line, so mid-run they can only be checked against
  // its final books (below), never above them.
  std::map<std::string, double> daemon_seen;
  REQUIRE(WaitUntil(
      [&] {
        daemon_seen = ParseMetrics(HttpGet(daemon_metrics, "/metrics"));
        return Metric(daemon_seen, "shefl_client_train_seconds_count") > 0;
      },
      300));

  // The run is over when summary.json exists; the coordinator lingers, so
  // one scrape now sees the final values.
  REQUIRE(WaitUntil([&] { return std::filesystem::exists(out + "/summary.json"); },
                    300));
  CHECK(WaitFor(d0, 60) == 0);
  CHECK(WaitFor(d1, 60) == 0);
  const auto m = ParseMetrics(HttpGet(metrics_port, "/metrics"));
  ::kill(coordinator, SIGTERM);  // ends the linger
  CHECK(WaitFor(coordinator, 60) == 0);

  auto summary = nlohmann::json::parse(ReadFile(out + "/summary.json"));
  const auto rounds = ReadJsonl(out + "/rounds.jsonl");
  REQUIRE(rounds.size() == 3u);
  const auto& b = summary["bytes"];
  // shefl_bytes_total: payload by tier, control apart, equal to the books.
  for (const char* dir_name : {"up", "down"}) {
    INFO("direction " << dir_name);
    const std::string d = dir_name;
    const std::string series = "shefl_bytes_total{direction=\"" + d + "\",tier=\"";
    CHECK(Metric(m, series + "hpc\"}") + Metric(m, series + "lpc\"}") ==
          b["payload_" + d].get<double>());
    CHECK(Metric(m, series + "control\"}") == b["control_" + d].get<double>());
  }
  CHECK(summary["total_bytes_up"] == b["payload_up"]);
  // The round, accuracies and update counts: the last line, and sums.
  const auto& last = rounds.back();
  CHECK(Metric(m, "shefl_round") == 3);
  CHECK(Metric(m, "shefl_round_duration_seconds_count") == 3);
  CHECK(Metric(m, "shefl_ensemble_accuracy") ==
        Approx(last["ensemble_accuracy"].get<double>()).epsilon(1e-9));
  REQUIRE(last["model_accuracy"].size() == 3u);
  for (int i = 0; i < 3; ++i)
    CHECK(Metric(m, "shefl_model_accuracy{model=\"" + std::to_string(i) + "\"}") ==
          Approx(last["model_accuracy"][i].get<double>()).epsilon(1e-9));
  for (const char* result : {"accepted", "rejected", "late"}) {
    INFO("updates " << result);
    int64_t sum = 0;
    for (const auto& r : rounds) sum += r["updates_" + std::string(result)].get<int64_t>();
    CHECK(Metric(m, "shefl_updates_total{result=\"" + std::string(result) + "\"}") ==
          sum);
  }
  CHECK(Metric(m, "shefl_updates_total{result=\"accepted\"}") == 3 * 9);

  // The daemon's counters, scraped mid-run, against its final books.
  uint64_t d0_up = 0;
  for (const auto& line : ReadJsonl(out + "/daemons/d0.jsonl"))
    for (const auto& [client, c] : line["bytes_by_client"].items())
      d0_up += c["payload_up"].get<uint64_t>() + c["control_up"].get<uint64_t>();
  const double seen_up = Metric(daemon_seen, "shefl_client_bytes_total{direction=\"up\"}");
  CHECK(seen_up > 0);
  CHECK(seen_up <= static_cast<double>(d0_up));

  // Against the kernel: accounting never exceeds what TCP carried, and
  // HTTP/2 framing and headers add at most 1% (README's claim).
  const uint64_t up = b["payload_up"].get<uint64_t>() + b["control_up"].get<uint64_t>();
  const uint64_t down =
      b["payload_down"].get<uint64_t>() + b["control_down"].get<uint64_t>();
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
