// The `run` label on every series of /metrics (common/net/run_label.h):
// the id a results folder gives, the label put first on each series of a
// real MetricsServer and changed when the run changes, and the readers'
// key without it.
#include "common/net/run_label.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <filesystem>
#include <memory>

#include "common/net/metrics_server.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("a run's id is its results folder's name, safe for the text format") {
  CHECK(RunIdOfFolder("results/quick-20261127-081930") == "quick-20261127-081930");
  CHECK(RunIdOfFolder("results/quick-20261127-081930/") == "quick-20261127-081930");
  CHECK(RunIdOfFolder("/srv/shefl/results/paper.seed-2") == "paper.seed-2");
  CHECK(RunIdOfFolder("runs/my run \"x\"") == "my_run__x_");
  CHECK(RunIdOfFolder("") == "");
  // "." is the folder the coordinator runs in: its own name.
  CHECK(RunIdOfFolder(".") == std::filesystem::current_path().filename().string());
}

TEST_CASE("the readers' key drops the run label and keeps the others") {
  CHECK(WithoutRunLabel("shefl_round{run=\"a-1\"}") == "shefl_round");
  CHECK(WithoutRunLabel("shefl_bytes_total{run=\"a\",direction=\"up\",tier=\"hpc\"}") ==
        "shefl_bytes_total{direction=\"up\",tier=\"hpc\"}");
  CHECK(WithoutRunLabel("shefl_round") == "shefl_round");
  CHECK(WithoutRunLabel("shefl_x{model=\"run\"}") == "shefl_x{model=\"run\"}");
  // The test suite's own reader agrees.
  const auto m = testing::ParseMetrics(
      "shefl_round{run=\"a\"} 3\nshefl_y{run=\"a\",model=\"1\"} 0.5\n");
  CHECK(m.at("shefl_round") == 3);
  CHECK(m.at("shefl_y{model=\"1\"}") == 0.5);
}

TEST_CASE("every series a MetricsServer serves carries the run it is told") {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildGauge().Name("shefl_round").Help("r").Register(*registry).Add({}).Set(4);
  auto& bytes = prometheus::BuildCounter().Name("shefl_bytes_total").Help("b").Register(*registry);
  bytes.Add({{"direction", "up"}}).Increment(10);
  // A series that sets its own run label gets the server's instead.
  bytes.Add({{"direction", "down"}, {"run", "stale"}}).Increment(2);
  auto server = MetricsServer::Start("127.0.0.1:0", registry);
  REQUIRE(server.ok());
  REQUIRE(*server != nullptr);
  const int port = (*server)->port();

  // Before the run is known (a daemon not yet registered): no label.
  std::string text = testing::HttpGet(port, "/metrics");
  CHECK(text.find("\nshefl_round 4") != std::string::npos);
  CHECK(text.find("shefl_round{") == std::string::npos);

  (*server)->SetRunId("quick-1");
  text = testing::HttpGet(port, "/metrics");
  CHECK(text.find("shefl_round{run=\"quick-1\"} 4") != std::string::npos);
  CHECK(text.find("shefl_bytes_total{run=\"quick-1\",direction=\"up\"} 10") !=
        std::string::npos);
  CHECK(text.find("shefl_bytes_total{run=\"quick-1\",direction=\"down\"} 2") !=
        std::string::npos);
  CHECK(text.find("stale") == std::string::npos);

  // The next run on the same endpoint is another series.
  (*server)->SetRunId("quick-2");
  text = testing::HttpGet(port, "/metrics");
  CHECK(text.find("shefl_round{run=\"quick-2\"} 4") != std::string::npos);
  CHECK(text.find("quick-1") == std::string::npos);
}

}  // namespace
}  // namespace shefl
