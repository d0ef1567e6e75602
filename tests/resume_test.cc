// kill -9 of the coordinator mid-run, then `shefl run --resume`: the run
// ends with the same models as one that was never interrupted.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <thread>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

constexpr int kRounds = 5;

std::vector<std::string> Launch(const TempDir& dir, const std::string& out,
                                const std::vector<std::string>& sets = {}) {
  std::vector<std::string> argv = {
      BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons", "2",
      "--threads", "1", "--out", out, "--set",
      "rounds=" + std::to_string(kRounds), "--set", "train.local_steps=300"};
  for (const std::string& kv : sets) argv.insert(argv.end(), {"--set", kv});
  return argv;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Runs kRounds straight and again with the coordinator killed after round
// 2 and resumed; both must end with the same models.
void CheckKillAndResume(const std::vector<std::string>& sets) {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  auto straight = RunProcess(Launch(dir, dir / "straight", sets), 300);
  INFO(straight.output);
  REQUIRE(straight.exit_code == 0);

  const std::string run = dir / "killed";
  const int launcher = Spawn(Launch(dir, run, sets), dir / "launcher.log");
  REQUIRE(WaitUntil([&] { return ReadJsonl(run + "/rounds.jsonl").size() >= 2; },
                    240));
  const nlohmann::json endpoints = WaitForEndpoints(run, 2, 60);
  REQUIRE(endpoints.is_object());
  REQUIRE(::kill(endpoints["coordinator_pid"].get<int>(), SIGKILL) == 0);
  CHECK(WaitFor(launcher, 60) == 1);  // the launcher reports the failure
  // What the killed coordinator had written, read once it is dead.
  const std::vector<std::string> before = Lines(ReadFile(run + "/rounds.jsonl"));
  REQUIRE(before.size() >= 2u);
  REQUIRE(before.size() < static_cast<size_t>(kRounds));

  auto resumed = RunProcess({BinDir() + "/shefl", "run", "--resume", run,
                             "--threads", "1"},
                            300);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  // A round's line is written before its checkpoint, so every line but the
  // last had its checkpoint on disk: the run resumes after round k with
  // n - 1 <= k <= n (n lines before the kill, n >= 2), not from scratch...
  const std::string log = ReadFile(run + "/logs/coordinator.log");
  INFO(log);
  const int n = static_cast<int>(before.size());
  const int k = ResumedAfter(log);
  CHECK(k >= 1);
  CHECK(k >= n - 1);
  CHECK(k <= n);
  // ...so those rounds are the lines written before the kill, byte for byte.
  const std::vector<std::string> after = Lines(ReadFile(run + "/rounds.jsonl"));
  REQUIRE(after.size() == static_cast<size_t>(kRounds));
  for (int i = 0; i < std::max(k, n - 1); ++i) {
    INFO("rounds.jsonl line " << i + 1);
    CHECK(after[i] == before[i]);
  }
  for (int i = 0; i < kRounds; ++i)
    CHECK(nlohmann::json::parse(after[i])["round"] == i + 1);

  auto a = nlohmann::json::parse(ReadFile(dir / "straight/summary.json"));
  auto b = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  CHECK(a["model_sha256"] == b["model_sha256"]);
}

TEST_CASE("a coordinator killed with -9 resumes to the same models") {
  CheckKillAndResume({});
}

// The server optimiser's state travels with the checkpoint: without it the
// resumed momentum would restart at 0 and the models would differ.
TEST_CASE("a run with server momentum resumes after kill -9 to the same models") {
  CheckKillAndResume({"method=fedavgm", "model.num_models=1",
                      "aggregation.rule=uniform"});
}

// The secure support's accumulators travel with the checkpoint: from zero
// again, the resumed rounds would pick other supports, and other models.
TEST_CASE("a secure run resumes after kill -9 to the same models") {
  CheckKillAndResume({"aggregation.secure=clear_support",
                      "secure.min_parties=2"});
}

// The oracle support's residual (what its sums left unsent) travels with
// the checkpoint too.
TEST_CASE("a secure run with the oracle support resumes after kill -9 to the same models") {
  CheckKillAndResume({"aggregation.secure=clear_support", "secure.min_parties=2",
                      "secure.support=oracle"});
}

// The layout support's next V follows the last round's vote: a resumed
// run that lost it would choose other supports.
TEST_CASE("a secure run with a vote resumes after kill -9 to the same models") {
  CheckKillAndResume({"aggregation.secure=clear_support", "secure.min_parties=2",
                      "secure.support=layout", "secure.vote=true"});
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("a resumed run's summary keeps the accuracy of the rounds before") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  auto first = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml",
                           "--daemons", "1", "--threads", "1", "--out", run,
                           "--insecure"},
                          300);
  INFO(first.output);
  REQUIRE(first.exit_code == 0);
  const auto before = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == 3u);
  std::filesystem::remove(run + "/summary.json");
  // Every round is checkpointed: the resumed coordinator has nothing to
  // run and must still report what the rounds reached.
  auto again = RunProcess({BinDir() + "/shefl-coordinator", "--resume", run,
                           "--listen", "127.0.0.1:0", "--insecure"},
                          120);
  INFO(again.output);
  REQUIRE(again.exit_code == 0);
  const auto after = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  CHECK(after["final_accuracy"] == rounds.back()["ensemble_accuracy"]);
  CHECK(after["final_accuracy"] == before["final_accuracy"]);
  CHECK(after["best_accuracy"] == before["best_accuracy"]);
  CHECK(after["final_model_accuracy"] == before["final_model_accuracy"]);
  CHECK(after["model_sha256"] == before["model_sha256"]);
  // The rounds done stay those of the checkpoint, and the run is over.
  CHECK(after["rounds"] == 3);
  CHECK(after["rounds"] == before["rounds"]);
  CHECK_THAT(again.output, Catch::Contains("run over after round 3"));
  CHECK(ReadJsonl(run + "/rounds.jsonl").size() == 3u);
  // The bytes of the recorded rounds are kept (payload moves only inside
  // rounds, so those totals are whole; control bytes outside any round,
  // registration and goodbyes, belong to the process that carried them).
  CHECK(after["total_bytes_up"] == before["total_bytes_up"]);
  CHECK(after["total_bytes_down"] == before["total_bytes_down"]);
  CHECK(after["total_bytes_up"].get<uint64_t>() > 0);
  uint64_t control = 0;
  for (const auto& r : rounds) control += r["control_bytes"].get<uint64_t>();
  CHECK(after["total_control_bytes"].get<uint64_t>() == control);

  // --set with --resume changes the record too, not only the process.
  std::filesystem::remove(run + "/summary.json");
  auto changed = RunProcess({BinDir() + "/shefl-coordinator", "--resume", run,
                             "--listen", "127.0.0.1:0", "--insecure", "--set",
                             "eval.threshold=0.5"},
                            120);
  INFO(changed.output);
  REQUIRE(changed.exit_code == 0);
  CHECK_THAT(ReadFile(run + "/config.yaml"), Catch::Contains("threshold: 0.5"));
  CHECK(nlohmann::json::parse(ReadFile(run + "/summary.json"))["threshold"] == 0.5);
}

TEST_CASE("rounds between evaluations carry no figures, and a resume keeps "
          "the last evaluation's round") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  auto launch = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin(), BinDir() + "/shefl");
    auto r = RunProcess(argv, 300);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    return r.output;
  };
  launch({"run", dir / "c.yaml", "--daemons", "1", "--threads", "1", "--out", run,
          "--insecure", "--set", "rounds=2", "--set", "eval.every=2"});
  const std::string resumed = launch({"run", "--resume", run, "--set", "rounds=5"});
  const auto lines = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(lines.size() == 5u);
  // Evaluated: rounds 2 and 4 (eval.every) and 5 (the last).
  const std::vector<int> source = {0, 2, 2, 4, 5};
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    INFO(l.dump());
    const bool evaluated = i == 1 || i == 3 || i == 4;
    CHECK(l["evaluated"] == evaluated);
    CHECK(l["evaluation_round"] == source[i]);
    // The results contract's keys are on every line, measured or null.
    for (const char* key : {"ensemble_accuracy", "model_accuracy", "ensemble_loss"}) {
      REQUIRE(l.contains(key));
      CHECK(l[key].is_null() == !evaluated);
    }
    CHECK(l["ensemble_accuracy"].is_number() == evaluated);
    CHECK(l.contains("eval_samples") == evaluated);
  }
  // The resumed launcher names the figures' round for round 3.
  std::string round3;
  for (const std::string& line : Lines(resumed))
    if (line.rfind("round 3/5", 0) == 0) round3 = line;
  INFO(resumed);
  CHECK_THAT(round3, Catch::Contains("% (round 2)  loss "));
  // `shefl ls` reads only evaluated rounds: the best is one of theirs.
  auto ls = RunProcess({BinDir() + "/shefl", "ls", run, "--json"}, 30);
  const double best = nlohmann::json::parse(ls.output)[0]["best_accuracy"].get<double>();
  CHECK(best > 0);
  CHECK(best == std::max({lines[1]["ensemble_accuracy"].get<double>(),
                          lines[3]["ensemble_accuracy"].get<double>(),
                          lines[4]["ensemble_accuracy"].get<double>()}));
}

TEST_CASE("SIGTERM stops the coordinator cleanly: checkpoint, summary, exit 0") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  const std::string run = dir / "run";
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config",
                       dir / "c.yaml", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--out", run,
                       "--threads", "1", "--set", "rounds=50", "--set",
                       "train.local_steps=200", "--insecure"},
                      dir / "c.log");
  const int d = Spawn({BinDir() + "/shefl-client", "--coordinator",
                       "127.0.0.1:" + std::to_string(port), "--clients", "0-7",
                       "--out", run + "/daemons", "--threads", "1",
                       "--insecure"},
                      dir / "d.log");
  REQUIRE(WaitUntil([&] { return !ReadJsonl(run + "/rounds.jsonl").empty(); },
                    240));
  ::kill(c, SIGTERM);
  INFO(ReadFile(dir / "c.log"));
  CHECK(WaitFor(c, 60) == 0);
  CHECK(WaitFor(d, 30) == 0);  // told to stop, not left hanging
  auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  const int rounds = summary["rounds"];
  CHECK(rounds >= 1);
  CHECK(rounds < 50);
  CHECK(ReadJsonl(run + "/rounds.jsonl").size() == static_cast<size_t>(rounds));
  CHECK(std::filesystem::exists(run + "/checkpoints/latest.ckpt"));
}

}  // namespace
}  // namespace shefl
