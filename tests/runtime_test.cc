// The distributed runtime through real processes on 127.0.0.1: the
// launcher starts shefl-coordinator and shefl-client daemons.
#include <signal.h>

#include <filesystem>
#include <map>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::ReadJsonl;
using testing::RunProcess;
using testing::TempDir;
using testing::BinDir;

nlohmann::json RunLauncher(const TempDir& dir, const std::string& out,
                           int daemons) {
  const std::string cfg = dir / "exp.yaml";
  testing::WriteFile(cfg, testing::SyntheticConfig());
  auto r = RunProcess({testing::BinDir() + "/shefl", "run", cfg, "--daemons",
                       std::to_string(daemons), "--threads", "1", "--out",
                       out},
                      300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return nlohmann::json::parse(testing::ReadFile(out + "/summary.json"));
}

TEST_CASE("one seed gives bit-identical models with 1 or 3 daemons") {
  TempDir dir;
  const auto one = RunLauncher(dir, dir / "one", 1);
  const auto three = RunLauncher(dir, dir / "three", 3);
  REQUIRE(one["model_sha256"].size() == 3u);
  CHECK(one["model_sha256"] == three["model_sha256"]);
  CHECK(one["final_accuracy"] == three["final_accuracy"]);
  CHECK(one["rounds"] == 3);
  CHECK(one["final_accuracy"].get<double>() > 0.5);  // it learned something

  // The results folder holds what docs/DESIGN.md ("The contract") promises.
  const std::string run = dir / "three";
  for (const char* f : {"config.yaml", "rounds.jsonl", "summary.json",
                        "endpoints.json", "checkpoints/latest.ckpt"})
    CHECK(std::filesystem::exists(run + "/" + f));
  auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == 3u);
  for (size_t i = 0; i < rounds.size(); ++i) {
    const auto& r = rounds[i];
    CHECK(r["round"] == static_cast<int>(i + 1));
    for (const char* key :
         {"wall_seconds", "ensemble_accuracy", "model_accuracy",
          "ensemble_loss", "participants", "updates_accepted",
          "updates_rejected", "updates_late", "bytes_up", "bytes_down",
          "control_bytes", "bytes_up_by_tier"})
      CHECK(r.contains(key));
    CHECK(r["participants"].size() == 5u);      // 2 HPC + 3 LPC
    CHECK(r["updates_accepted"] == 2 * 3 + 3);  // HPCs train all 3
    CHECK(r["updates_rejected"] == 0);
    CHECK(r["bytes_up"].get<uint64_t>() ==
          r["bytes_up_by_tier"]["hpc"].get<uint64_t>() +
              r["bytes_up_by_tier"]["lpc"].get<uint64_t>());
  }
  auto endpoints = nlohmann::json::parse(testing::ReadFile(run + "/endpoints.json"));
  CHECK(endpoints["daemons"].size() == 3u);
}

TEST_CASE("the coordinator's per-client bytes equal each daemon's, exactly") {
  TempDir dir;
  const std::string out = dir / "run";
  RunLauncher(dir, out, 3);
  // (round, client) -> counts, from the daemons' own books.
  std::map<std::pair<int, std::string>, nlohmann::json> daemon_books;
  size_t daemon_entries = 0;  // a pair booked by two daemons shows here
  for (const auto& e : std::filesystem::directory_iterator(out + "/daemons"))
    for (const auto& line : ReadJsonl(e.path().string()))
      for (const auto& [client, counts] : line["bytes_by_client"].items()) {
        daemon_books[{line["round"].get<int>(), client}] = counts;
        ++daemon_entries;
      }
  CHECK(daemon_entries == daemon_books.size());
  // The same (round, client) -> counts from the coordinator's rounds.jsonl.
  std::map<std::pair<int, std::string>, nlohmann::json> coordinator_books;
  for (const auto& line : ReadJsonl(out + "/rounds.jsonl"))
    for (const auto& [client, counts] : line["bytes_by_client"].items())
      coordinator_books[{line["round"].get<int>(), client}] = counts;
  // Both ways: no entry on either side that the other lacks, equal values.
  REQUIRE(coordinator_books.size() == 3u * 5u);
  CHECK(daemon_books.size() == coordinator_books.size());
  for (const auto& [key, counts] : coordinator_books) {
    INFO("round " << key.first << " client " << key.second);
    auto it = daemon_books.find(key);
    REQUIRE(it != daemon_books.end());
    CHECK(it->second == counts);
    CHECK(counts["payload_up"].get<uint64_t>() > 0);
  }
  for (const auto& [key, counts] : daemon_books) {
    INFO("daemon-side round " << key.first << " client " << key.second);
    CHECK(coordinator_books.count(key) == 1u);
  }
}

TEST_CASE("a bad config stops the coordinator at start, naming the key") {
  TempDir dir;
  const std::string cfg = dir / "bad.yaml";
  testing::WriteFile(cfg, testing::SyntheticConfig("aggregation:\n  beta: 3\n"));
  auto r = RunProcess({testing::BinDir() + "/shefl-coordinator", "--config",
                       cfg, "--listen", "127.0.0.1:0", "--out", dir / "out",
                       "--insecure"},
                      60);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("aggregation.beta"));
  auto r2 = RunProcess({testing::BinDir() + "/shefl-coordinator", "--config",
                        dir / "bad.yaml", "--set", "rounds=0", "--insecure"},
                       60);
  CHECK(r2.exit_code == 1);
  CHECK_THAT(r2.output, Catch::Contains("aggregation.beta"));
  auto r3 = RunProcess({testing::BinDir() + "/shefl-coordinator", "--bogus", "1"}, 60);
  CHECK(r3.exit_code == 2);
  CHECK_THAT(r3.output, Catch::Contains("--bogus"));
  // --flag=value is read as --flag value (the key named the same way).
  auto r4 = RunProcess({testing::BinDir() + "/shefl-coordinator",
                        "--config=" + cfg, "--listen=127.0.0.1:0",
                        "--out=" + (dir / "out4"), "--insecure"},
                       60);
  CHECK(r4.exit_code == 1);
  CHECK_THAT(r4.output, Catch::Contains("aggregation.beta"));
  auto r5 = RunProcess({testing::BinDir() + "/shefl-client", "--insecure=yes"}, 60);
  CHECK(r5.exit_code == 2);
  CHECK_THAT(r5.output, Catch::Contains("--insecure takes no value"));
}

TEST_CASE("a daemon's device error ends shefl run at once, said once") {
  // No machine has 100 GPUs: the daemon's start fails on CPU and CUDA
  // builds alike, and restarting it would fail the same way.
  TempDir dir;
  const std::string cfg = dir / "c.yaml";
  testing::WriteFile(cfg, testing::SyntheticConfig());
  auto r = RunProcess({BinDir() + "/shefl", "run", cfg, "--device", "cuda:99",
                       "--threads", "1", "--out", dir / "run"},
                      120);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(testing::Occurrences(r.output, "device 'cuda:99'") == 1);
  CHECK_THAT(r.output, !Catch::Contains("restarting in"));
  auto ls = RunProcess({BinDir() + "/shefl", "ls", dir / "run", "--json"}, 30);
  CHECK(nlohmann::json::parse(ls.output)[0]["state"] == "failed");
}

TEST_CASE("a second coordinator on a taken port is refused, naming the flag") {
  // gRPC's SO_REUSEPORT would let it listen beside the first one, and the
  // kernel would spread the daemons between two runs.
  TempDir dir;
  const std::string cfg = dir / "c.yaml";
  testing::WriteFile(cfg, testing::SyntheticConfig("rounds: 1000\n"));
  const int port = testing::FreePort(), health = testing::FreePort();
  const std::string listen = "127.0.0.1:" + std::to_string(port);
  const std::string health_listen = "127.0.0.1:" + std::to_string(health);
  const std::string log = dir / "first.log";
  const int first = testing::Spawn(
      {BinDir() + "/shefl-coordinator", "--config", cfg, "--listen", listen,
       "--health-listen", health_listen, "--out", dir / "first", "--insecure"},
      log);
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadFile(log).find("listening on port") !=
                   std::string::npos; },
      60));
  auto second = testing::RunProcess(
      {BinDir() + "/shefl-coordinator", "--config", cfg, "--listen", listen,
       "--out", dir / "second", "--insecure"},
      60);
  auto third = testing::RunProcess(
      {BinDir() + "/shefl-coordinator", "--config", cfg, "--listen",
       "127.0.0.1:0", "--health-listen", health_listen, "--out", dir / "third",
       "--insecure"},
      60);
  ::kill(-first, SIGKILL);
  testing::WaitFor(first, 10);
  INFO(second.output);
  CHECK(second.exit_code == 1);
  CHECK_THAT(second.output, Catch::Contains("--listen " + listen) &&
                                Catch::Contains("in use"));
  CHECK_THAT(second.output, !Catch::Contains("listening on port"));
  INFO(third.output);
  CHECK(third.exit_code == 1);
  CHECK_THAT(third.output, Catch::Contains("--health-listen " + health_listen) &&
                               Catch::Contains("in use"));
}

}  // namespace
}  // namespace shefl
