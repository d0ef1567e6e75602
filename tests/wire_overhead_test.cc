// Accounted bytes against what the kernel carried: the daemons reach the
// coordinator through a counting TCP relay on 127.0.0.1. The accounting
// (serialized messages + 5-byte gRPC headers) must never exceed the TCP
// payload; the test prints the overhead of HTTP/2 framing and headers.
// It also scrapes both binaries' /metrics while the run is going.
#include <catch2/catch.hpp>

#include <chrono>
#include <iostream>
#include <thread>

#include "tests/test_support.h"

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("accounted bytes never exceed the bytes TCP carried") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int grpc_port = FreePort(), metrics_port = FreePort();
  const int daemon_metrics = FreePort();
  const std::string out = dir / "run";
  const int coordinator = Spawn(
      {BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml", "--listen",
       "127.0.0.1:" + std::to_string(grpc_port), "--metrics-listen",
       "127.0.0.1:" + std::to_string(metrics_port), "--out", out, "--threads",
       "1"},
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

  // Scrape both while the run goes on.
  std::string coord_metrics, client_metrics;
  for (int i = 0; i < 600; ++i) {
    std::string m = HttpGet(metrics_port, "/metrics");
    if (m.find("shefl_round 1") != std::string::npos ||
        m.find("shefl_round 2") != std::string::npos) {
      coord_metrics = m;
      client_metrics = HttpGet(daemon_metrics, "/metrics");
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  const int rc = WaitFor(coordinator, 300);
  INFO(ReadFile(dir / "coordinator.log"));
  REQUIRE(rc == 0);
  CHECK(WaitFor(d0, 30) == 0);
  CHECK(WaitFor(d1, 30) == 0);

  for (const char* name :
       {"shefl_round", "shefl_round_duration_seconds_bucket",
        "shefl_ensemble_accuracy", "shefl_model_accuracy{model=\"0\"}",
        "shefl_bytes_total{direction=\"up\",tier=\"hpc\"}",
        "shefl_updates_total{result=\"accepted\"}", "shefl_clients_connected"})
    CHECK_THAT(coord_metrics, Catch::Contains(name));
  for (const char* name : {"shefl_client_train_seconds_count",
                           "shefl_client_bytes_total{direction=\"up\"}"})
    CHECK_THAT(client_metrics, Catch::Contains(name));
  CHECK(HttpGet(metrics_port, "/other").empty());  // the run is over

  auto summary = nlohmann::json::parse(ReadFile(out + "/summary.json"));
  const auto& b = summary["bytes"];
  const uint64_t up = b["payload_up"].get<uint64_t>() + b["control_up"].get<uint64_t>();
  const uint64_t down =
      b["payload_down"].get<uint64_t>() + b["control_down"].get<uint64_t>();
  REQUIRE(up > 0);
  REQUIRE(down > 0);
  CHECK(up <= relay.bytes_up());
  CHECK(down <= relay.bytes_down());
  std::cout << "wire overhead: up " << relay.bytes_up() << " / " << up << " = "
            << static_cast<double>(relay.bytes_up()) / up << ", down "
            << relay.bytes_down() << " / " << down << " = "
            << static_cast<double>(relay.bytes_down()) / down << "\n";
}

}  // namespace
}  // namespace shefl
