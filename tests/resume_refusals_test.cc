// What `--resume` refuses, and that a refusal leaves the run as it was:
// a change of model.num_models, and a damaged rounds.jsonl line (named by
// its number). A torn last line (a crash mid-append) is still dropped
// quietly, as before.
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

// A finished 2-round run of the synthetic config (shefl run, insecure).
std::string FinishedRun(const TempDir& dir) {
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string out = dir / "run";
  auto r = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons",
                       "1", "--threads", "1", "--insecure", "--out", out,
                       "--set", "rounds=2"},
                      300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return out;
}

ProcessResult Resume(const std::string& run, const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {BinDir() + "/shefl-coordinator", "--resume",
                                   run, "--listen", "127.0.0.1:0", "--insecure"};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  return RunProcess(argv, 120);
}

struct Files {
  std::string config, rounds, checkpoint;
  explicit Files(const std::string& run)
      : config(ReadFile(run + "/config.yaml")),
        rounds(ReadFile(run + "/rounds.jsonl")),
        checkpoint(ReadFile(run + "/checkpoints/latest.ckpt")) {}
  bool operator==(const Files& o) const {
    return config == o.config && rounds == o.rounds && checkpoint == o.checkpoint;
  }
};

TEST_CASE("a resume refuses a new model.num_models before writing anything",
          "[resume]") {
  TempDir dir;
  const std::string run = FinishedRun(dir);
  const Files before(run);
  auto r = Resume(run, {"model.num_models=4", "rounds=3"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("model.num_models is 4"));
  CHECK(Files(run) == before);
}

TEST_CASE("a resume names a damaged rounds.jsonl line and changes nothing",
          "[resume]") {
  TempDir dir;
  const std::string run = FinishedRun(dir);
  std::string rounds = ReadFile(run + "/rounds.jsonl");
  REQUIRE(rounds.find('\n') != std::string::npos);
  rounds.replace(0, rounds.find('\n'), "{\"round\": \"one\"}");
  WriteFile(run + "/rounds.jsonl", rounds);
  const Files before(run);
  auto r = Resume(run, {"rounds=3"});
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("rounds.jsonl:1: not a round record"));
  CHECK(Files(run) == before);
}

}  // namespace
}  // namespace shefl
