// A coordinator restarted with --resume serves, from its first scrape, the
// gauges its run had reached (round, accuracy figures, uncertainty,
// planned rounds), not zeros: a dashboard keeps its lines and the
// accuracy-dropped alert does not fire after each restart. A finished run
// says so on /metrics (shefl_run_finished), which the alerts read.
#include <signal.h>

#include <chrono>
#include <cmath>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

double Now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_CASE("a resumed coordinator's /metrics holds the gauges of its last recorded round") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  // Two rounds, then the coordinator lingers: its final /metrics says the
  // run finished.
  const int port = FreePort(), metrics = FreePort();
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                       "--listen", addr, "--metrics-listen",
                       "127.0.0.1:" + std::to_string(metrics), "--out", run,
                       "--threads", "1", "--insecure", "--set", "rounds=2",
                       "--metrics-linger-s", "120"},
                      dir / "c.log");
  const int d = Spawn({BinDir() + "/shefl-client", "--coordinator", addr,
                       "--clients", "0-7", "--name", "d0", "--out", run + "/daemons",
                       "--threads", "1", "--insecure"},
                      dir / "d.log");
  INFO(ReadFile(dir / "c.log") << ReadFile(dir / "d.log"));
  CHECK(WaitFor(d, 300) == 0);
  std::map<std::string, double> done;
  REQUIRE(WaitUntil([&] {
    done = ParseMetrics(HttpGet(metrics, "/metrics"));
    return done.count("shefl_run_finished") && done["shefl_run_finished"] == 1;
  }, 120));
  CHECK(done["shefl_round"] == 2);
  CHECK(done["shefl_rounds_planned"] == 2);
  ::kill(c, SIGTERM);
  CHECK(WaitFor(c, 60) == 0);

  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == 2u);
  const nlohmann::json& last = rounds.back();
  REQUIRE(last["evaluated"] == true);

  // Resumed with two more rounds and no daemon: it waits for one, serving
  // /metrics meanwhile.
  const int metrics2 = FreePort();
  const double resumed_at = Now();
  const int c2 = Spawn({BinDir() + "/shefl-coordinator", "--resume", run,
                        "--listen", "127.0.0.1:" + std::to_string(FreePort()),
                        "--metrics-listen", "127.0.0.1:" + std::to_string(metrics2),
                        "--threads", "1", "--insecure", "--set", "rounds=4"},
                       dir / "c2.log");
  INFO(ReadFile(dir / "c2.log"));
  std::map<std::string, double> m;
  REQUIRE(WaitUntil([&] {
    m = ParseMetrics(HttpGet(metrics2, "/metrics"));
    return m.count("shefl_round") > 0;
  }, 120));
  CHECK(ResumedAfter(ReadFile(dir / "c2.log")) == 2);
  CHECK(m["shefl_round"] == 2);
  CHECK(m["shefl_rounds_planned"] == 4);
  CHECK(m["shefl_run_finished"] == 0);
  CHECK(m["shefl_ensemble_accuracy"] ==
        Approx(last["ensemble_accuracy"].get<double>()).epsilon(1e-9));
  CHECK(m["shefl_ensemble_accuracy"] > 0);
  if (last["ensemble_loss"].is_number())
    CHECK(m["shefl_ensemble_loss"] ==
          Approx(last["ensemble_loss"].get<double>()).epsilon(1e-9));
  CHECK(m["shefl_ensemble_ece"] == Approx(last["ece"].get<double>()).epsilon(1e-9));
  const auto& members = last["model_accuracy"];
  REQUIRE(members.size() == 3u);
  for (size_t i = 0; i < members.size(); ++i) {
    const std::string series = "shefl_model_accuracy{model=\"" + std::to_string(i) + "\"}";
    INFO(series);
    REQUIRE(m.count(series) == 1);
    CHECK(m[series] == Approx(members[i].get<double>()).epsilon(1e-9));
  }
  CHECK(m["shefl_ensemble_entropy{subset=\"all\"}"] ==
        Approx(last["mean_entropy"].get<double>()).epsilon(1e-9));
  CHECK(m["shefl_ensemble_mutual_information"] ==
        Approx(last["mutual_information"].get<double>()).epsilon(1e-9));
  CHECK(m["shefl_ensemble_predictive_variance{subset=\"all\"}"] ==
        Approx(last["predictive_variance"].get<double>()).epsilon(1e-9));
  // The round's end is stamped at the restart (not 0: no "56 years ago").
  CHECK(m["shefl_round_end_timestamp_seconds"] >= std::floor(resumed_at) - 1);
  CHECK(m["shefl_round_end_timestamp_seconds"] <= Now() + 1);
  // /metrics serves before start-up ends, and a signal during start-up
  // ends the coordinator at once (exit 143): wait until it runs (its
  // first waiting line) before asking it to stop.
  CHECK(WaitUntil([&] {
    return ReadFile(dir / "c2.log").find("waiting for clients") != std::string::npos;
  }, 60));
  ::kill(c2, SIGTERM);
  CHECK(WaitFor(c2, 60) == 0);
}

}  // namespace
}  // namespace shefl
