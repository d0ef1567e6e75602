// `shefl ls`, `status`, `report` and `stop` on a real `shefl run` (a
// coordinator and a daemon on 127.0.0.1) while it runs, then `shefl run
// --resume` finishing what `shefl stop` left; and `shefl stop` of a
// coordinator that no `shefl run` started.
#include <signal.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

namespace fs = std::filesystem;
using namespace testing;

ProcessResult Shefl(const std::vector<std::string>& args, double timeout_s = 60) {
  std::vector<std::string> argv = {BinDir() + "/shefl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, timeout_s);
}

nlohmann::json LsJson(const std::string& dir) {
  const ProcessResult r = Shefl({"ls", dir, "--json"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.output);
  REQUIRE(j.size() == 1);
  return j[0];
}

TEST_CASE("ls, status and report follow a live run, and stop leaves it resumable") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "results/live";
  // Enough rounds that the stop lands well before the last one.
  const int launcher = Spawn(
      {BinDir() + "/shefl", "run", dir / "c.yaml", "--threads", "1", "--insecure",
       "--out", run, "--set", "rounds=200", "--set", "train.local_steps=40"},
      dir / "launcher.log");
  INFO(ReadFile(dir / "launcher.log"));
  REQUIRE(WaitUntil([&] { return ReadJsonl(run + "/rounds.jsonl").size() >= 1; }, 240));
  const nlohmann::json ep = WaitForEndpoints(run, 1, 60);
  REQUIRE(ep.is_object());
  CHECK(ep["launcher_pid"] == launcher);

  const nlohmann::json listed = LsJson(dir / "results");
  CHECK(listed["state"] == "running");
  CHECK(listed["coordinator_pid"] == ep["coordinator_pid"]);
  CHECK(listed["rounds_planned"] == 200);
  CHECK(listed["rounds_done"].get<int>() >= 1);

  const ProcessResult status = Shefl({"status", run});
  INFO(status.output);
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.output, Catch::Contains("state      running"));
  CHECK_THAT(status.output, Catch::Contains("phase      training round "));
  CHECK_THAT(status.output, Catch::Contains("clients    8/8 connected, 0 missing"));
  CHECK_THAT(status.output, Catch::Contains("started by shefl run pid " +
                                            std::to_string(launcher)));
  CHECK_THAT(status.output, Catch::Contains("daemons    daemon-0 "));
  CHECK_THAT(status.output, Catch::Contains("ETA        about "));
  CHECK(status.output.find("does not answer") == std::string::npos);

  const ProcessResult report = Shefl({"report", run});
  INFO(report.output);
  CHECK(report.exit_code == 0);
  CHECK_THAT(report.output, Catch::Contains("note: synthetic-test is not finished (running, "));

  const ProcessResult stop = Shefl({"stop", run}, 180);
  INFO(stop.output);
  REQUIRE(stop.exit_code == 0);
  CHECK_THAT(stop.output, Catch::Contains("sent SIGTERM to shefl run (pid " +
                                          std::to_string(launcher) + ")"));
  CHECK_THAT(stop.output, Catch::Contains("resume with: shefl run --resume " + run));
  CHECK(WaitFor(launcher, 30) == 130);  // it had exited already: stop waits for it
  const nlohmann::json stopped = LsJson(dir / "results");
  CHECK(stopped["resumable"] == true);
  const int done = stopped["rounds_done"].get<int>();
  CHECK(done < 200);
  CHECK(Shefl({"stop", run}).exit_code == 1);  // nothing left to stop

  // The resumed run ends two rounds on, and is then finished.
  const ProcessResult resumed =
      Shefl({"run", "--resume", run, "--set", "rounds=" + std::to_string(done + 2)}, 300);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  // It went on from the stopped run's checkpoint, not from the start.
  CHECK(ResumedAfter(ReadFile(run + "/logs/coordinator.log")) >= 1);
  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == static_cast<size_t>(done + 2));
  for (size_t i = 0; i < rounds.size(); ++i) CHECK(rounds[i]["round"] == i + 1);
  const nlohmann::json finished = LsJson(dir / "results");
  CHECK(finished["state"] == "finished");
  CHECK(finished["rounds_done"] == done + 2);
  const ProcessResult final_report = Shefl({"report", run});
  CHECK(final_report.output.find("note:") == std::string::npos);
}

TEST_CASE("stop signals a coordinator that no shefl run started, and status reads its /metrics") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  const int metrics = FreePort();
  const int coordinator = Spawn(
      {BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml", "--listen",
       "127.0.0.1:0", "--metrics-listen", "127.0.0.1:" + std::to_string(metrics), "--out",
       run, "--insecure"},
      dir / "c.log");
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(WaitUntil([&] { return !HttpGet(metrics, "/metrics").empty(); }, 120));
  // What a deployment's own tooling would record (no launcher).
  WriteFile(run + "/endpoints.json",
            nlohmann::json{{"coordinator", {{"grpc", "127.0.0.1:1"},
                                            {"metrics", "127.0.0.1:" + std::to_string(metrics)}}},
                           {"daemons", nlohmann::json::array()},
                           {"coordinator_pid", coordinator}}
                .dump());
  const ProcessResult status = Shefl({"status", run});
  INFO(status.output);
  CHECK_THAT(status.output, Catch::Contains("phase      waiting for clients: 0/8 connected"));
  CHECK_THAT(status.output, Catch::Contains("clients    0/8 connected, 8 missing"));

  const ProcessResult stop = Shefl({"stop", run}, 120);
  INFO(stop.output);
  CHECK(stop.exit_code == 0);
  CHECK_THAT(stop.output, Catch::Contains("sent SIGTERM to the coordinator (pid " +
                                          std::to_string(coordinator) + ")"));
  CHECK(WaitFor(coordinator, 30) == 0);  // a clean stop
}

}  // namespace
}  // namespace shefl
