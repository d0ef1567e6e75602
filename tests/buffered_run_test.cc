// round.mode buffered in whole runs (server/buffered_loop.h), a real
// coordinator and real daemons through `shefl run`:
//  - with buffered.size = buffered.concurrency = the cohort, each buffer
//    holds one cohort's fresh updates and the run's models equal a
//    synchronous run's bit for bit; one line per application;
//  - `shefl-coordinator --replay` rebuilds the models from buffer_log.jsonl
//    and uploads/ bit for bit, and names the model when an upload was
//    changed; a buffered run is not resumed;
//  - with one daemon thirty times slower than the other (clients.slowdown)
//    and buffered.max_staleness 0, its updates are refused as stale, each
//    application holds only fresh ones, and the run still finishes.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

// FedAvg on one model, a cohort of 5 of 8 clients, 3 rounds.
std::vector<std::string> Run(const TempDir& dir, const std::string& out,
                             const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {BinDir() + "/shefl", "run", dir / "c.yaml",
                                   "--daemons", "2", "--threads", "1",
                                   "--out", out};
  std::vector<std::string> sets = {"method=fedavg", "model.num_models=1",
                                   "round_deadline_s=120"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  for (const std::string& kv : sets) argv.insert(argv.end(), {"--set", kv});
  return argv;
}

nlohmann::json Summary(const std::string& run) {
  return nlohmann::json::parse(ReadFile(run + "/summary.json"));
}

TEST_CASE("buffers of one cohort's fresh updates equal synchronous rounds bit for bit, and a replay rebuilds them") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig(""));
  auto sync = RunProcess(Run(dir, dir / "sync", {}), 300);
  INFO(sync.output);
  REQUIRE(sync.exit_code == 0);
  auto buffered = RunProcess(
      Run(dir, dir / "buffered",
          {"round.mode=buffered", "buffered.record_uploads=true"}),
      300);
  INFO(buffered.output);
  REQUIRE(buffered.exit_code == 0);
  const nlohmann::json a = Summary(dir / "sync"), b = Summary(dir / "buffered");
  REQUIRE(a["model_sha256"].size() == 1u);
  CHECK(a["model_sha256"] == b["model_sha256"]);
  CHECK(a["final_accuracy"] == b["final_accuracy"]);
  CHECK(b["rounds"] == 3);
  CHECK(b["buffered"]["applications"] == 3);
  CHECK(b["buffered"]["tickets"] == 15);
  CHECK(b["buffered"]["updates_stale"] == 0);
  CHECK(b["buffered"]["updates_rejected"] == 0);
  // Every download of the run, as the synchronous run books them.
  CHECK(b["total_download_bytes_logical"] == a["total_download_bytes_logical"]);
  CHECK(b["total_download_bytes_logical"].get<uint64_t>() > 0);
  const auto lines = ReadJsonl(dir / "buffered/rounds.jsonl");
  REQUIRE(lines.size() == 3u);
  for (size_t i = 0; i < lines.size(); ++i) {
    INFO(lines[i].dump());
    CHECK(lines[i]["mode"] == "buffered");
    CHECK(lines[i]["round"] == i + 1);
    CHECK(lines[i]["version"] == i + 1);
    CHECK(lines[i]["updates"] == 5);
    CHECK(lines[i]["staleness"] == nlohmann::json{{"0", 5}});
    CHECK(lines[i]["early"] == false);
    CHECK(lines[i]["bytes_up"].get<uint64_t>() > 0);
  }
  CHECK(lines[2]["evaluated"] == true);
  // The replay: the same models from the same updates in the same order.
  auto replay = RunProcess({BinDir() + "/shefl-coordinator", "--replay",
                            dir / "buffered"},
                           120);
  INFO(replay.output);
  CHECK(replay.exit_code == 0);
  CHECK(replay.output.find("replay equals the run: 1 models") !=
        std::string::npos);
  // One changed value in one upload: the replay says which model differs.
  const std::string upload = dir / "buffered/uploads/7-0.delta";
  std::string bytes = ReadFile(upload);
  REQUIRE(bytes.size() > 8);
  bytes[bytes.size() - 2] ^= 0x01;
  WriteFile(upload, bytes);
  auto changed = RunProcess({BinDir() + "/shefl-coordinator", "--replay",
                             dir / "buffered"},
                            120);
  INFO(changed.output);
  CHECK(changed.exit_code != 0);
  CHECK(changed.output.find("model 0: the replay reached") != std::string::npos);
  // Its tasks in flight are not in the checkpoint: no resume.
  auto resume = RunProcess({BinDir() + "/shefl-coordinator", "--resume",
                            dir / "buffered", "--insecure"},
                           60);
  INFO(resume.output);
  CHECK(resume.exit_code != 0);
  CHECK(resume.output.find("cannot be resumed") != std::string::npos);
}

TEST_CASE("a daemon thirty times slower sends stale updates, refused, and the run finishes on fresh ones") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig(""));
  auto run = RunProcess(
      Run(dir, dir / "out",
          {"round.mode=buffered", "rounds=8", "buffered.size=1",
           "buffered.concurrency=4", "buffered.max_staleness=0",
           "clients.slow_fraction=0.5", "clients.slowdown=30"}),
      300);
  INFO(run.output);
  REQUIRE(run.exit_code == 0);
  const nlohmann::json s = Summary(dir / "out");
  INFO(s.dump());
  CHECK(s["buffered"]["applications"] == 8);
  CHECK(s["buffered"]["updates_stale"].get<int64_t>() > 0);
  const auto lines = ReadJsonl(dir / "out/rounds.jsonl");
  REQUIRE(lines.size() == 8u);
  for (const nlohmann::json& line : lines) {
    INFO(line.dump());
    CHECK(line["updates"] == 1);
    CHECK(line["staleness"] == nlohmann::json{{"0", 1}});
  }
  // The slow daemon ran with --slowdown 30, the other without.
  const std::string slow = ReadFile(dir / "out/logs/daemon-0.log");
  CHECK(slow.find("stale") != std::string::npos);
}

}  // namespace
}  // namespace shefl
