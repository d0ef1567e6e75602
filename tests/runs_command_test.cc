// `shefl ls`, `status`, `stop` and `report` on run folders written in their
// real formats, one per state (cli/run_state.h), and --version on every
// binary. The same commands on a live `shefl run`: runs_live_test.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

namespace fs = std::filesystem;
using namespace testing;

// One rounds.jsonl line as the coordinator writes it (the fields these
// commands read; the rest of a real line is ignored).
std::string RoundLine(int round, double accuracy, double wall) {
  return nlohmann::json{{"round", round},
                        {"ensemble_accuracy", accuracy},
                        {"evaluated", true},
                        {"wall_seconds", wall},
                        {"bytes_up", 1000000},
                        {"bytes_down", 2000000}}
             .dump() +
         "\n";
}

// A run folder of `rounds` planned rounds with `done` lines recorded.
std::string MakeRun(const TempDir& dir, const std::string& name, int rounds, int done) {
  const std::string run = dir / name;
  fs::create_directories(run + "/checkpoints");
  WriteFile(run + "/config.yaml",
            "name: " + fs::path(name).filename().string() + "\nmethod: fedavg\nrounds: " + std::to_string(rounds) +
                "\nclients:\n  num_clients: 8\neval:\n  threshold: 0.6\n");
  std::string lines;
  for (int r = 1; r <= done; ++r) lines += RoundLine(r, 0.5 + 0.1 * r, 2.0);
  WriteFile(run + "/rounds.jsonl", lines);
  return run;
}

void WriteSummary(const std::string& run, int rounds) {
  WriteFile(run + "/summary.json",
            nlohmann::json{{"rounds", rounds}, {"final_accuracy", 0.7},
                           {"best_accuracy", 0.7}, {"rounds_to_threshold", 1},
                           {"total_bytes_up", 2000000}, {"total_bytes_down", 4000000},
                           {"wall_seconds", 4.5}}
                .dump(2));
}

void WriteEndpoints(const std::string& run, int coordinator_pid, int launcher_pid) {
  WriteFile(run + "/endpoints.json",
            nlohmann::json{{"coordinator", {{"grpc", "127.0.0.1:1"},
                                            {"metrics", "127.0.0.1:2"}}},
                           {"daemons", nlohmann::json::array()},
                           {"coordinator_pid", coordinator_pid},
                           {"launcher_pid", launcher_pid}}
                .dump(2));
}

ProcessResult Shefl(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinDir() + "/shefl"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, 60);
}

// The folders of every state, under dir/results.
struct Runs {
  std::string finished, stopped, resumable, crashed, stale;
};

Runs MakeEveryState(const TempDir& dir) {
  Runs r;
  r.finished = MakeRun(dir, "results/finished", 2, 2);
  WriteSummary(r.finished, 2);
  r.stopped = MakeRun(dir, "results/stopped", 4, 1);
  WriteSummary(r.stopped, 1);
  WriteFile(r.stopped + "/checkpoints/latest.ckpt", "x");
  r.resumable = MakeRun(dir, "results/resumable", 4, 2);
  WriteFile(r.resumable + "/checkpoints/latest.ckpt", "x");
  // Its coordinator's pid is alive but is this test, not a coordinator: a
  // reused pid must not make the run look alive.
  WriteEndpoints(r.resumable, static_cast<int>(getpid()), static_cast<int>(getpid()));
  r.crashed = MakeRun(dir, "results/crashed", 4, 0);
  WriteEndpoints(r.crashed, 999999, 0);
  // Stopped after round 1, resumed, died after round 3: summary.json is the
  // first sitting's and no longer the run's.
  r.stale = MakeRun(dir, "results/stale", 4, 3);
  WriteSummary(r.stale, 1);
  WriteFile(r.stale + "/checkpoints/latest.ckpt", "x");
  fs::create_directories(dir / "results/not-a-run/logs");
  WriteFile(dir / "results/not-a-run/notes.txt", "x");
  return r;
}

TEST_CASE("shefl ls lists each run folder with its state, rounds and best accuracy") {
  TempDir dir;
  MakeEveryState(dir);
  const ProcessResult r = Shefl({"ls", dir / "results"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::regex row(R"(\n(\S+) +fedavg +(\S+) +(\S+) +(\S+) +[-0-9 :]+ +\S+)");
  std::map<std::string, std::vector<std::string>> rows;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), row), end; it != end; ++it)
    rows[(*it)[1]] = {(*it)[2], (*it)[3], (*it)[4]};
  CHECK(rows.size() == 5);  // not-a-run is no run
  CHECK(rows["finished"] == std::vector<std::string>{"finished", "2/2", "70.0%"});
  CHECK(rows["stopped"] == std::vector<std::string>{"stopped", "1/4", "70.0%"});
  CHECK(rows["resumable"] == std::vector<std::string>{"resumable", "2/4", "70.0%"});
  CHECK(rows["crashed"] == std::vector<std::string>{"crashed", "0/4", "-"});
  CHECK(rows["stale"] == std::vector<std::string>{"resumable", "3/4", "80.0%"});
  // Aligned: every line has its state column at the header's offset.
  const size_t at = r.output.find("state");
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);)
    CHECK(line.find_first_not_of(' ', at) == at);
}

TEST_CASE("shefl ls --json gives scripts the same, and a bad DIR is an error") {
  TempDir dir;
  const Runs runs = MakeEveryState(dir);
  const ProcessResult r = Shefl({"ls", dir / "results", "--json"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.output);
  REQUIRE(j.size() == 5);
  std::map<std::string, nlohmann::json> by_state;
  for (const auto& run : j) by_state[run["dir"].get<std::string>()] = run;
  const nlohmann::json& stopped = by_state[runs.stopped];
  CHECK(stopped["state"] == "stopped");
  CHECK(stopped["resumable"] == true);
  CHECK(stopped["rounds_done"] == 1);
  CHECK(stopped["rounds_planned"] == 4);
  CHECK(stopped["wall_seconds"] == 4.5);
  CHECK(stopped["coordinator_pid"].is_null());
  CHECK(by_state[runs.finished]["resumable"] == false);
  CHECK(by_state[runs.crashed]["best_accuracy"].is_null());
  CHECK(by_state[runs.resumable]["wall_seconds"] == 4.0);  // 2 rounds of 2 s
  CHECK(by_state[runs.resumable]["started"].is_number());

  const ProcessResult missing = Shefl({"ls", dir / "nowhere"});
  CHECK(missing.exit_code == 1);
  CHECK_THAT(missing.output, Catch::Contains("no folder " + (dir / "nowhere")));
  const ProcessResult extra = Shefl({"ls", "a", "b"});
  CHECK(extra.exit_code == 2);
  CHECK_THAT(extra.output, Catch::Contains("one DIR"));
}

TEST_CASE("the started column comes from the launcher's folder name") {
  TempDir dir;
  MakeRun(dir, "results/quick-20261103-140259", 1, 1);
  const ProcessResult r = Shefl({"ls", dir / "results"});
  INFO(r.output);
  CHECK_THAT(r.output, Catch::Contains("2026-11-03 14:02"));
}

TEST_CASE("shefl report on a run that is not finished reports its rounds so far") {
  TempDir dir;
  const Runs runs = MakeEveryState(dir);
  const ProcessResult r = Shefl({"report", runs.resumable, runs.finished});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // From rounds.jsonl: 2 rounds, final 70%, best 70%, 0.6 reached at round
  // 1 (60%), 2 MB up and 4 MB down.
  CHECK_THAT(r.output, Catch::Contains(
      "resumable       2      70.0%     70.0%             1        2.00        4.00"));
  CHECK_THAT(r.output, Catch::Contains(
      "note: resumable is not finished (resumable, 2 of 4 rounds): its figures "
      "are those of the rounds so far"));
  CHECK(Occurrences(r.output, "note:") == 1);  // the finished run has none
  // A summary.json left by a first sitting is not the resumed run's.
  const ProcessResult stale = Shefl({"report", runs.stale});
  CHECK_THAT(stale.output, Catch::Contains("stale       3      80.0%     80.0%"));
  const ProcessResult stopped = Shefl({"report", runs.stopped});
  CHECK_THAT(stopped.output, Catch::Contains("(stopped, 1 of 4 rounds)"));

  const ProcessResult none = Shefl({"report", dir / "results/not-a-run"});
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.output, Catch::Contains("summary.json"));
  CHECK_THAT(none.output, Catch::Contains("it has no config.yaml"));
}

TEST_CASE("shefl status and stop on runs that are not running") {
  TempDir dir;
  const Runs runs = MakeEveryState(dir);
  const ProcessResult resumable = Shefl({"status", runs.resumable});
  INFO(resumable.output);
  CHECK(resumable.exit_code == 0);
  CHECK_THAT(resumable.output, Catch::Contains("state      resumable"));
  CHECK_THAT(resumable.output, Catch::Contains("crashed after round 2 of 4"));
  CHECK_THAT(resumable.output,
             Catch::Contains("resume with: shefl run --resume " + runs.resumable));
  CHECK_THAT(resumable.output, Catch::Contains("processes  none running"));
  CHECK_THAT(resumable.output, Catch::Contains("best accuracy 70.0%, last 70.0%"));
  const ProcessResult crashed = Shefl({"status", runs.crashed});
  CHECK_THAT(crashed.output, Catch::Contains("crashed before its first checkpoint"));
  CHECK_THAT(Shefl({"status", runs.finished}).output,
             Catch::Contains("phase      finished: 2 of 2 rounds"));

  const ProcessResult not_run = Shefl({"status", dir / "results/not-a-run"});
  CHECK(not_run.exit_code == 1);
  CHECK_THAT(not_run.output, Catch::Contains("not-a-run is not a run folder: it has no config.yaml"));
  WriteFile(dir / "results/not-a-run/config.yaml", "rounds: 1\n");
  CHECK_THAT(Shefl({"status", dir / "results/not-a-run"}).output,
             Catch::Contains("it has neither rounds.jsonl nor endpoints.json"));

  const ProcessResult stop = Shefl({"stop", runs.resumable});
  CHECK(stop.exit_code == 1);
  CHECK_THAT(stop.output, Catch::Contains("is not running (it is resumable)"));
  CHECK(Shefl({"stop"}).exit_code == 2);
  CHECK(Shefl({"stop", runs.stopped, "--timeout-s", "0"}).exit_code == 2);
}

TEST_CASE("a live process that is not this run's coordinator does not make it running") {
  TempDir dir;
  const std::string run = MakeRun(dir, "results/other", 4, 1);
  // A real shefl-coordinator, of another folder (waiting for clients).
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int other = Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                           "--listen", "127.0.0.1:0", "--out", dir / "elsewhere",
                           "--insecure"},
                          dir / "other.log");
  REQUIRE(WaitUntil([&] { return fs::exists(dir / "elsewhere/config.yaml"); }, 120));
  WriteEndpoints(run, other, 0);
  INFO(ReadFile(dir / "other.log"));
  CHECK_THAT(Shefl({"ls", run}).output, Catch::Contains("crashed"));
  // The same process is the running coordinator of its own folder.
  WriteEndpoints(dir / "elsewhere", other, 0);
  CHECK_THAT(Shefl({"ls", dir / "elsewhere"}).output, Catch::Contains("running"));
  // Nothing answers at the /metrics address the file gives: status says so
  // and goes by the files.
  const ProcessResult status = Shefl({"status", dir / "elsewhere"});
  INFO(status.output);
  CHECK(status.exit_code == 0);
  CHECK_THAT(status.output, Catch::Contains("running, before its first round ended"));
  CHECK_THAT(status.output, Catch::Contains(
      "the coordinator's /metrics at 127.0.0.1:2 does not answer: figures from the files alone"));
  ::kill(other, SIGKILL);
  WaitFor(other, 30);
}

TEST_CASE("every binary prints its version and the build's commit") {
  // The version is project()'s in CMakeLists.txt.
  const std::string cmake = ReadFile(std::string(SHEFL_SOURCE_DIR) + "/CMakeLists.txt");
  std::smatch m;
  REQUIRE(std::regex_search(cmake, m, std::regex(R"(project\(shefl VERSION ([0-9.]+))")));
  const std::string version = m[1];
  for (const char* bin : {"shefl", "shefl-coordinator", "shefl-client"}) {
    const ProcessResult r = RunProcess({BinDir() + "/" + bin, "--version"}, 60);
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(std::regex_match(r.output, std::regex(std::string(bin) + " " + version +
                                                " \\(git ([0-9a-f]{7,}|unknown)\\)\n")));
  }
}

TEST_CASE("ls, status and stop answer --help") {
  for (const char* command : {"ls", "status", "stop"}) {
    const ProcessResult r = Shefl({command, "--help"});
    INFO(command << ": " << r.output);
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.output, Catch::Contains(std::string("usage: shefl ") + command));
  }
  const ProcessResult main = Shefl({"--help"});
  for (const char* command : {"  ls [DIR]", "  status RUN_DIR", "  stop RUN_DIR", "--version"})
    CHECK_THAT(main.output, Catch::Contains(command));
}

}  // namespace
}  // namespace shefl
