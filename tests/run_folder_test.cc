// A results folder that holds a run is never written into by accident:
// `--config C --out DIR` refuses it; `--continue` resumes it when its
// config is C's and refuses, naming what changed, when it is another's.
// The real shefl-coordinator on 127.0.0.1.
// Before Catch: LibTorch's glog would otherwise replace Catch's CHECK.
#include "server/run/run_folder.h"

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("config changes are named key by key, out_dir aside", "[run_folder]") {
  const std::string a = "name: \"x\"\nrounds: 3\nout_dir: \"/a\"\nmodel:\n  name: \"mlp\"\n  num_models: 3\n";
  const std::string b = "name: \"x\"\nrounds: 5\nout_dir: \"/b\"\nmodel:\n  name: \"cnn\"\n  num_models: 3\n";
  CHECK(ConfigChanges(a, a).empty());
  const std::vector<std::string> want = {"model.name: \"mlp\" -> \"cnn\"",
                                        "rounds: 3 -> 5"};
  CHECK(ConfigChanges(a, b) == want);
}

std::vector<std::string> Coordinator(const TempDir& dir, const std::string& out,
                                     std::vector<std::string> extra) {
  std::vector<std::string> argv = {BinDir() + "/shefl-coordinator", "--config",
                                   dir / "c.yaml", "--out", out, "--listen",
                                   "127.0.0.1:0", "--threads", "1", "--insecure"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

TEST_CASE("a folder holding a run is refused, continued, or refused with what changed",
          "[run_folder]") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string out = dir / "run";
  // A run of 2 rounds with its own daemon.
  const int port = FreePort();
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                       "--out", out, "--listen", "127.0.0.1:" + std::to_string(port),
                       "--threads", "1", "--insecure", "--set", "rounds=2"},
                      dir / "first.log");
  const int d = Spawn({BinDir() + "/shefl-client", "--coordinator",
                       "127.0.0.1:" + std::to_string(port), "--clients", "0-7",
                       "--out", out + "/daemons", "--threads", "1", "--insecure"},
                      dir / "daemon.log");
  REQUIRE(WaitFor(c, 240) == 0);
  WaitFor(d, 60);
  REQUIRE(HoldsRun(out));
  const std::string rounds = ReadFile(out + "/rounds.jsonl");

  auto again = RunProcess(Coordinator(dir, out, {"--set", "rounds=2"}), 60);
  INFO(again.output);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Catch::Contains("already holds a run"));
  CHECK_THAT(again.output, Catch::Contains("--resume " + out));

  auto changed = RunProcess(
      Coordinator(dir, out, {"--continue", "--set", "rounds=4", "--set", "model.num_models=2"}), 60);
  INFO(changed.output);
  CHECK(changed.exit_code == 1);
  CHECK_THAT(changed.output, Catch::Contains("another config"));
  CHECK_THAT(changed.output, Catch::Contains("rounds: 2 -> 4"));
  CHECK_THAT(changed.output, Catch::Contains("model.num_models: 3 -> 2"));
  // Nothing was written by either refusal.
  CHECK(ReadFile(out + "/rounds.jsonl") == rounds);
  CHECK_THAT(ReadFile(out + "/config.yaml"), Catch::Contains("rounds: 2"));

  // The same config continues: the run is over after round 2, so the
  // resumed coordinator says so and ends without a new round.
  auto same = RunProcess(Coordinator(dir, out, {"--continue", "--set", "rounds=2"}), 120);
  INFO(same.output);
  CHECK(same.exit_code == 0);
  CHECK_THAT(same.output, Catch::Contains("resum"));
  CHECK(ReadFile(out + "/rounds.jsonl") == rounds);
}

}  // namespace
}  // namespace shefl
