// Methods and settings end to end through the launcher (a real coordinator
// and two daemons on 127.0.0.1): summary.json's best accuracy and rounds to
// threshold from real rounds, fp16/bf16 values on the wire, FedProx and
// Fed-ensemble.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/test_support.h"

namespace shefl {
namespace {

using namespace testing;

struct Run {
  nlohmann::json summary;
  std::vector<nlohmann::json> rounds;
};

Run Launch(const TempDir& dir, const std::string& name,
           const std::vector<std::string>& sets) {
  const std::string cfg = dir / "c.yaml";
  WriteFile(cfg, SyntheticConfig());
  const std::string out = dir / name;
  std::vector<std::string> argv = {BinDir() + "/shefl", "run", cfg,
                                   "--daemons", "2", "--threads", "1",
                                   "--out", out};
  for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
  auto r = RunProcess(argv, 300);
  INFO(name << ": " << r.output);
  REQUIRE(r.exit_code == 0);
  return {nlohmann::json::parse(ReadFile(out + "/summary.json")),
          ReadJsonl(out + "/rounds.jsonl")};
}

uint64_t Sum(const std::vector<nlohmann::json>& rounds, const char* key) {
  uint64_t s = 0;
  for (const auto& r : rounds) s += r[key].get<uint64_t>();
  return s;
}

TEST_CASE("summary.json's best accuracy and rounds to threshold come from the rounds") {
  TempDir dir;
  // Threshold just above round 1's accuracy: reached later, or never.
  const Run probe = Launch(dir, "probe", {"rounds=4"});
  REQUIRE(probe.rounds.size() == 4u);
  std::vector<double> acc;
  for (const auto& r : probe.rounds) acc.push_back(r["ensemble_accuracy"]);
  CHECK(probe.summary["best_accuracy"] == *std::max_element(acc.begin(), acc.end()));
  CHECK(probe.summary["final_accuracy"] == acc.back());
  CHECK(probe.summary["rounds"] == 4);

  const double threshold = acc[0] + 1e-6;
  const Run run = Launch(dir, "run", {"rounds=4", "eval.threshold=" + std::to_string(threshold)});
  const auto first = std::find_if(acc.begin(), acc.end(),
                                  [&](double a) { return a >= threshold; });
  INFO("accuracies " << nlohmann::json(acc).dump());
  if (first == acc.end())
    CHECK(run.summary["rounds_to_threshold"].is_null());
  else
    CHECK(run.summary["rounds_to_threshold"] == (first - acc.begin()) + 1);
  CHECK(run.summary["threshold"].get<double>() == Approx(threshold));
  // The same seed gave the same rounds; a threshold below round 1 is met
  // at round 1, one above every round never.
  CHECK(run.summary["best_accuracy"] == probe.summary["best_accuracy"]);
  const Run low = Launch(dir, "low", {"rounds=2", "eval.threshold=0.01"});
  CHECK(low.summary["rounds_to_threshold"] == 1);
  const Run high = Launch(dir, "high", {"rounds=2", "eval.threshold=0.999"});
  CHECK(high.summary["rounds_to_threshold"].is_null());
}

TEST_CASE("fp16 and bf16 values halve the value bytes of every update") {
  TempDir dir;
  const Run fp32 = Launch(dir, "fp32", {});
  const Run fp16 = Launch(dir, "fp16", {"compression.value_type=fp16"});
  const Run bf16 = Launch(dir, "bf16", {"compression.value_type=bf16"});
  for (const Run* r : {&fp32, &fp16, &bf16}) {
    CHECK(r->summary["final_accuracy"].get<double>() > 0.5);  // 4 classes
    REQUIRE(r->rounds.size() == 3u);
  }
  // Round 1 trains from the same weights, so the same indices go out:
  // 9 updates of k = ceil(0.1 * 44,404) = 4,441 values, 2 bytes fewer
  // each. Per update, three length varints (the header's encoded_size, the
  // chunk's bytes field, the chunk message) may shrink a byte each, and the
  // session id in the header differs in length between runs by up to 4
  // characters (a random suffix of 1 to 5 digits).
  const int64_t slack = 9 * (3 + 4);
  const int64_t saved = fp32.rounds[0]["bytes_up"].get<int64_t>() -
                        fp16.rounds[0]["bytes_up"].get<int64_t>();
  CHECK(saved >= 9 * 4441 * 2 - slack);
  CHECK(saved <= 9 * 4441 * 2 + slack);
  const int64_t fp16_vs_bf16 = fp16.rounds[0]["bytes_up"].get<int64_t>() -
                               bf16.rounds[0]["bytes_up"].get<int64_t>();
  CHECK(std::abs(fp16_vs_bf16) <= 9 * 4);
  // Different roundings: different models.
  CHECK(fp16.summary["model_sha256"] != bf16.summary["model_sha256"]);
  CHECK(fp16.summary["model_sha256"] != fp32.summary["model_sha256"]);
  CHECK(Sum(fp16.rounds, "bytes_up") < Sum(fp32.rounds, "bytes_up"));
}

TEST_CASE("FedProx and Fed-ensemble run end to end") {
  TempDir dir;
  const Run avg = Launch(dir, "fedavg", {"method=fedavg", "model.num_models=1"});
  const Run prox = Launch(dir, "fedprox", {"method=fedprox", "model.num_models=1",
                                           "train.prox_mu=0.5"});
  const Run ens = Launch(dir, "fedensemble", {"method=fedensemble"});
  for (const Run* r : {&avg, &prox, &ens}) {
    CHECK(r->summary["final_accuracy"].get<double>() > 0.5);
    REQUIRE(r->rounds.size() == 3u);
    for (const auto& line : r->rounds) {
      // No tiers: every participant trains exactly one model.
      CHECK(line["participants"].size() == 5u);
      CHECK(line["updates_accepted"] == 5);
      CHECK(line["bytes_up_by_tier"]["hpc"] == 0);
    }
  }
  CHECK(avg.summary["model_sha256"].size() == 1u);
  CHECK(prox.summary["model_sha256"].size() == 1u);
  CHECK(ens.summary["model_sha256"].size() == 3u);
  // The proximal term changed the training: other weights than FedAvg's.
  CHECK(prox.summary["model_sha256"] != avg.summary["model_sha256"]);
  // Fed-ensemble spreads the 5 clients over the 3 members every round.
  for (const auto& line : ens.rounds) {
    int members_trained = 0;
    for (const auto& [model, counts] : line["bytes_by_model"].items())
      members_trained += counts["payload_up"].get<uint64_t>() > 0;
    CHECK(members_trained >= 2);
  }
}

}  // namespace
}  // namespace shefl
