// Methods and settings end to end through the launcher (a real coordinator
// and two daemons on 127.0.0.1): summary.json's accuracies and rounds to
// threshold from real rounds, fp16/bf16 values on the wire, FedAvg,
// FedProx and Fed-ensemble.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

struct Run {
  std::string dir;
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
  return {out, nlohmann::json::parse(ReadFile(out + "/summary.json")),
          ReadJsonl(out + "/rounds.jsonl")};
}

uint64_t Sum(const std::vector<nlohmann::json>& rounds, const char* key) {
  uint64_t s = 0;
  for (const auto& r : rounds) s += r[key].get<uint64_t>();
  return s;
}

std::vector<double> Accuracies(const Run& run) {
  std::vector<double> acc;
  for (const auto& r : run.rounds) acc.push_back(r["ensemble_accuracy"]);
  return acc;
}

// summary.json's accuracy figures, recomputed from the run's own rounds;
// returns its rounds_to_threshold (0 for null).
int64_t CheckSummary(const Run& run) {
  const std::vector<double> acc = Accuracies(run);
  const double threshold = run.summary["threshold"];
  INFO(run.dir << ": accuracies " << nlohmann::json(acc).dump()
               << ", threshold " << threshold);
  REQUIRE(acc.size() == run.rounds.size());
  REQUIRE(!acc.empty());
  CHECK(run.summary["rounds"] == acc.size());
  CHECK(run.summary["best_accuracy"] == *std::max_element(acc.begin(), acc.end()));
  CHECK(run.summary["final_accuracy"] == acc.back());
  const auto first = std::find_if(acc.begin(), acc.end(),
                                  [&](double a) { return a >= threshold; });
  if (first == acc.end()) {
    CHECK(run.summary["rounds_to_threshold"].is_null());
    return 0;
  }
  CHECK(run.summary["rounds_to_threshold"] == (first - acc.begin()) + 1);
  return run.summary["rounds_to_threshold"].is_number()
             ? run.summary["rounds_to_threshold"].get<int64_t>()
             : -1;
}

TEST_CASE("summary.json's best and final accuracy and rounds to threshold come from the rounds") {
  TempDir dir;
  // lr 0.01 climbs over four rounds and dips at the end here, so the best
  // round is not the last.
  const Run probe = Launch(dir, "probe", {"rounds=4", "train.lr=0.01",
                                          "eval.threshold=0.999"});
  REQUIRE(probe.rounds.size() == 4u);
  CHECK(CheckSummary(probe) == 0);  // 0.999: never reached, null
  CHECK(probe.summary["threshold"] == 0.999);

  // A threshold between round 1's accuracy and the best later one is
  // first met at a round after the first.
  const std::vector<double> acc = Accuracies(probe);
  const double later = *std::max_element(acc.begin() + 1, acc.end());
  INFO("probe accuracies " << nlohmann::json(acc).dump());
  REQUIRE(later > acc[0]);
  const double threshold = (acc[0] + later) / 2;
  const Run mid = Launch(dir, "mid", {"rounds=4", "train.lr=0.01",
                                      "eval.threshold=" + std::to_string(threshold)});
  CHECK(CheckSummary(mid) > 1);
  CHECK(Accuracies(mid) == acc);  // one seed, the same rounds
  // (A threshold met at round 1: the fp32 run of the next test case.)
}

TEST_CASE("fp16 and bf16 values save 2 bytes a value on the wire and still learn") {
  TempDir dir;
  // A threshold below every accuracy is met at round 1.
  const Run fp32 = Launch(dir, "fp32", {"eval.threshold=0.01"});
  CHECK(CheckSummary(fp32) == 1);
  const Run fp16 = Launch(dir, "fp16", {"compression.value_type=fp16"});
  const Run bf16 = Launch(dir, "bf16", {"compression.value_type=bf16"});
  for (const Run* r : {&fp32, &fp16, &bf16}) {
    INFO(r->dir);
    CHECK(r->summary["final_accuracy"].get<double>() > 0.5);  // 4 classes
    REQUIRE(r->rounds.size() == 3u);
    CheckSummary(*r);
    for (const auto& line : r->rounds) CHECK(line["updates_accepted"] == 9);
  }
  // Every update carries k = ceil(0.1 * 44,404) = 4,441 values (d of the
  // 16-feature, 4-class mlp); 2 HPCs x 3 models + 3 LPCs = 9 a round.
  const int64_t values_per_round = 9 * 4441;
  // Round 1 trains from the same weights, so the same indices go out and
  // only the values shrink. Per update, three length varints (the
  // header's encoded_size, the chunk's bytes field, the chunk message) may
  // shrink a byte each, and the session id in the header differs in length
  // between runs by up to 4 characters (a random suffix of 1 to 5 digits).
  const int64_t slack = 9 * (3 + 4);
  auto up = [](const Run& r, int i) { return r.rounds[i]["bytes_up"].get<int64_t>(); };
  const int64_t saved = up(fp32, 0) - up(fp16, 0);
  CHECK(saved >= 2 * values_per_round - slack);
  CHECK(saved <= 2 * values_per_round + slack);
  CHECK(std::abs(up(fp16, 0) - up(bf16, 0)) <= 9 * 4);
  // Later rounds start from models that differ, so the indices (and the
  // size of their gaps) differ a little; the values still save 2 bytes
  // each: within 2% of that over the whole run.
  const double saved_total = static_cast<double>(Sum(fp32.rounds, "bytes_up")) -
                             static_cast<double>(Sum(fp16.rounds, "bytes_up"));
  const double saved_bf16 = static_cast<double>(Sum(fp32.rounds, "bytes_up")) -
                            static_cast<double>(Sum(bf16.rounds, "bytes_up"));
  std::cout << "fp16 saved " << saved_total << " bytes up, bf16 " << saved_bf16
            << ", 2 bytes x values: " << 2 * 3 * values_per_round << "; fp16/fp32 "
            << static_cast<double>(Sum(fp16.rounds, "bytes_up")) /
                   Sum(fp32.rounds, "bytes_up")
            << "\n";
  CHECK(saved_total == Approx(2.0 * 3 * values_per_round).epsilon(0.02));
  CHECK(saved_bf16 == Approx(2.0 * 3 * values_per_round).epsilon(0.02));
  // Downloads stay fp32 (the global models).
  CHECK(Sum(fp16.rounds, "bytes_down") == Sum(fp32.rounds, "bytes_down"));
  // Different roundings: different models.
  CHECK(fp16.summary["model_sha256"] != bf16.summary["model_sha256"]);
  CHECK(fp16.summary["model_sha256"] != fp32.summary["model_sha256"]);
}

TEST_CASE("FedAvg, FedProx and Fed-ensemble run end to end") {
  TempDir dir;
  const Run avg = Launch(dir, "fedavg", {"method=fedavg", "model.num_models=1"});
  // FedProx with its preset mu (0.01), twice: reproducible.
  const Run prox = Launch(dir, "fedprox", {"method=fedprox", "model.num_models=1"});
  const Run prox2 = Launch(dir, "fedprox2", {"method=fedprox", "model.num_models=1"});
  const Run ens = Launch(dir, "fedensemble", {"method=fedensemble"});
  for (const Run* r : {&avg, &prox, &ens}) {
    INFO(r->dir);
    CHECK(r->summary["final_accuracy"].get<double>() > 0.5);  // 4 classes
    REQUIRE(r->rounds.size() == 3u);
    for (const auto& line : r->rounds) {
      // No tiered assignment: every participant trains exactly one model.
      CHECK(line["participants"].size() == 5u);
      CHECK(line["updates_accepted"] == 5);
      CHECK(line["updates_rejected"] == 0);
      // Tiers come from the client id (0-3 are HPCs) under every method:
      // the books split the same one-model uploads by tier.
      uint64_t hpc = 0;
      for (const auto& [client, b] : line["bytes_by_client"].items())
        if (std::stoi(client) < 4) hpc += b["payload_up"].get<uint64_t>();
      CHECK(line["bytes_up_by_tier"]["hpc"] == hpc);
      CHECK(line["bytes_up_by_tier"]["hpc"].get<uint64_t>() +
                line["bytes_up_by_tier"]["lpc"].get<uint64_t>() ==
            line["bytes_up"].get<uint64_t>());
    }
  }
  CHECK(avg.summary["model_sha256"].size() == 1u);
  CHECK(prox.summary["model_sha256"].size() == 1u);
  CHECK(ens.summary["model_sha256"].size() == 3u);
  CHECK_THAT(ReadFile(prox.dir + "/config.yaml"), Catch::Contains("prox_mu: 0.01"));
  // The proximal term changed the training: other weights than FedAvg's
  // from the same seed, and the same weights again from the same seed.
  CHECK(prox.summary["model_sha256"] != avg.summary["model_sha256"]);
  CHECK(prox2.summary["model_sha256"] == prox.summary["model_sha256"]);
  // Fed-ensemble: over one period of M = 3 rounds every model meets every
  // one of the 5 clusters once, so each model gets 5 updates in all.
  // Updates of one run are the same size to within a few bytes, so a
  // model's upload bytes over the round's mean update size count them.
  std::map<std::string, int> updates_of;
  for (const auto& line : ens.rounds) {
    const double per_update = line["bytes_up"].get<double>() / 5;
    int in_round = 0;
    for (const auto& [model, counts] : line["bytes_by_model"].items()) {
      const double n = counts["payload_up"].get<double>() / per_update;
      CHECK(std::abs(n - std::round(n)) < 0.05);
      updates_of[model] += static_cast<int>(std::round(n));
      in_round += static_cast<int>(std::round(n));
    }
    CHECK(in_round == 5);
  }
  CHECK(updates_of == std::map<std::string, int>{{"0", 5}, {"1", 5}, {"2", 5}});
}

}  // namespace
}  // namespace shefl
