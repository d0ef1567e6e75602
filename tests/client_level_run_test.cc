// Client-level metrics (003 Eq. 5-7) and personalised weights
// (004 Eq. 3-4) through a real run: `shefl run` starts the coordinator and
// two daemons on 127.0.0.1 with eval.client_holdout and eval.gamma set.
// The figures in rounds.jsonl must equal a direct computation from the
// run's own final models (its checkpoint) and the seed's partition, and
// the daemons must train on the clients' training parts only.
// LibTorch's headers come before Catch (see tests/coordinator_harness.h).
#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "client/local_trainer.h"
#include "common/core/config.h"
#include "common/data/data.h"
#include "common/fed/client_metrics.h"
#include "common/fed/config_load.h"
#include "common/fed/partition.h"
#include "common/learn/flat_state.h"
#include "common/learn/models.h"
#include "server/run/model_store.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

struct Run {
  std::string dir;
  ExperimentConfig config;
  std::vector<nlohmann::json> rounds;
};

Run Launch(const TempDir& dir, const std::string& method,
           const std::vector<std::string>& sets = {}) {
  const std::string cfg = dir / "c.yaml";
  WriteFile(cfg, SyntheticConfig());
  const std::string out = dir / method;
  std::vector<std::string> argv = {
      BinDir() + "/shefl", "run", cfg, "--daemons", "2", "--threads", "1",
      "--out", out, "--set", "method=" + method, "--set", "rounds=2",
      "--set", "eval.client_holdout=0.25", "--set", "eval.gamma=0.3"};
  for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
  auto r = RunProcess(argv, 300);
  INFO(method << ": " << r.output);
  REQUIRE(r.exit_code == 0);
  auto config = LoadConfig(out + "/config.yaml");
  REQUIRE(config.ok());
  return {out, *config, ReadJsonl(out + "/rounds.jsonl")};
}

// Every client's (train, held-out) split, computed here from the seed.
std::vector<ClientSplit> Splits(const ExperimentConfig& c, const Dataset& train) {
  auto labels = LabelVector(train);
  REQUIRE(labels.ok());
  std::vector<ClientSplit> out;
  for (int64_t i = 0; i < c.clients.num_clients; ++i) {
    auto idx = ClientIndices(c.partition, *labels, train.num_classes,
                             c.clients.num_clients, i, c.seed);
    REQUIRE(idx.ok());
    auto s = SplitClientShard(*idx, c.eval.client_holdout, c.seed, i);
    REQUIRE(s.ok());
    out.push_back(*s);
  }
  return out;
}

// Probabilities [M][n][C] of the final models on data[idx], one sample at
// a time through each member (no batching shared with the evaluator).
std::vector<std::vector<std::vector<double>>> Probs(
    const std::vector<std::shared_ptr<Net>>& nets, const Dataset& data,
    const std::vector<int64_t>& idx) {
  c10::NoGradGuard no_grad;
  std::vector<std::vector<std::vector<double>>> p(nets.size());
  for (size_t k = 0; k < nets.size(); ++k) {
    nets[k]->eval();
    for (int64_t i : idx) {
      at::Tensor out = nets[k]->forward(data.x.narrow(0, i, 1)).to(at::kDouble);
      at::Tensor soft = out.softmax(1)[0];
      std::vector<double> row(soft.size(0));
      for (int64_t c = 0; c < soft.size(0); ++c) row[c] = soft[c].item<double>();
      p[k].push_back(row);
    }
  }
  return p;
}

double Accuracy(const std::vector<std::vector<std::vector<double>>>& p,
                size_t from, const std::vector<double>& w,
                const std::vector<int64_t>& y) {
  int right = 0;
  for (size_t i = from; i < p[0].size(); ++i) {
    std::vector<double> bar(p[0][i].size(), 0.0);
    for (size_t k = 0; k < p.size(); ++k)
      for (size_t c = 0; c < bar.size(); ++c) bar[c] += w[k] * p[k][i][c];
    const auto pred = std::max_element(bar.begin(), bar.end()) - bar.begin();
    right += pred == y[i - from] ? 1 : 0;
  }
  return static_cast<double>(right) / static_cast<double>(p[0].size() - from);
}

// Sorted, linear interpolation at 0.1 * (K - 1).
double P10(std::vector<double> a) {
  std::sort(a.begin(), a.end());
  const double pos = 0.1 * static_cast<double>(a.size() - 1);
  const size_t j = static_cast<size_t>(pos);
  if (j + 1 >= a.size()) return a.back();
  return a[j] + (pos - j) * (a[j + 1] - a[j]);
}

void CheckClientLevel(const Run& run) {
  const ExperimentConfig& c = run.config;
  REQUIRE(run.rounds.size() == 2u);
  const nlohmann::json& last = run.rounds.back();
  INFO(last.dump());
  REQUIRE(last["evaluated"] == true);
  auto ckpt = ModelStore::LoadCheckpoint(run.dir + "/checkpoints/latest.ckpt");
  REQUIRE(ckpt.ok());
  REQUIRE(ckpt->second == 2);
  auto train = LoadDataset(c.data, /*train=*/true, c.seed);
  REQUIRE(train.ok());
  auto shape = ShapeOf(*train, c.data.text_vocab);
  REQUIRE(shape.ok());
  std::vector<std::shared_ptr<Net>> nets;
  for (int64_t m = 0; m < c.model.num_models; ++m) {
    auto net = MakeModel(c.model.name, *shape);
    REQUIRE(net.ok());
    REQUIRE(Unflatten(*ckpt->first->Get(m), **net).ok());
    nets.push_back(*net);
  }
  const std::vector<ClientSplit> splits = Splits(c, *train);
  std::vector<double> uniform, personal;
  double weight_entropy = 0;
  int64_t samples = 0;
  const std::vector<double> flat(nets.size(), 1.0 / nets.size());
  for (const ClientSplit& s : splits) {
    std::vector<int64_t> idx = s.train;
    idx.insert(idx.end(), s.held_out.begin(), s.held_out.end());
    const auto p = Probs(nets, *train, idx);
    std::vector<int64_t> y;
    for (int64_t i : idx) y.push_back(train->y[i].item<int64_t>());
    // alpha_k = exp(-loss_k / gamma) / sum, loss_k on the training part.
    std::vector<double> alpha;
    double z = 0;
    for (size_t k = 0; k < nets.size(); ++k) {
      double loss = 0;
      for (size_t i = 0; i < s.train.size(); ++i) loss -= std::log(p[k][i][y[i]]);
      alpha.push_back(std::exp(-loss / s.train.size() / c.eval.gamma));
      z += alpha.back();
    }
    for (double& a : alpha) {
      a /= z;
      if (a > 0) weight_entropy -= a * std::log(a);
    }
    if (s.held_out.empty()) continue;
    const std::vector<int64_t> held_y(y.begin() + s.train.size(), y.end());
    uniform.push_back(Accuracy(p, s.train.size(), flat, held_y));
    personal.push_back(Accuracy(p, s.train.size(), alpha, held_y));
    samples += static_cast<int64_t>(s.held_out.size());
  }
  REQUIRE(uniform.size() == splits.size());  // every client holds some out
  const double tol = 1e-9;
  CHECK(last["clients_evaluated"] == static_cast<int64_t>(uniform.size()));
  CHECK(last["client_eval_samples"] == samples);
  double mean = 0;
  for (double a : uniform) mean += a / uniform.size();
  CHECK(last["client_mean_accuracy"].get<double>() == Approx(mean).margin(tol));
  CHECK(last["client_worst_accuracy"].get<double>() ==
        Approx(*std::min_element(uniform.begin(), uniform.end())).margin(tol));
  CHECK(last["client_p10_accuracy"].get<double>() ==
        Approx(P10(uniform)).margin(tol));
  double pmean = 0;
  for (double a : personal) pmean += a / personal.size();
  CHECK(last["personal_client_mean_accuracy"].get<double>() ==
        Approx(pmean).margin(tol));
  CHECK(last["personal_client_worst_accuracy"].get<double>() ==
        Approx(*std::min_element(personal.begin(), personal.end())).margin(tol));
  CHECK(last["personal_client_p10_accuracy"].get<double>() ==
        Approx(P10(personal)).margin(tol));
  CHECK(last["personal_weight_entropy"].get<double>() ==
        Approx(weight_entropy / splits.size()).epsilon(1e-5));
  // The uncertainty fields are there on every line.
  for (const char* key : {"predictive_variance", "mutual_information",
                          "entropy_correct", "entropy_wrong",
                          "predictive_variance_correct",
                          "predictive_variance_wrong"})
    CHECK(last.contains(key));
}

TEST_CASE("client-level metrics of a real Fed-ensemble run equal a direct computation") {
  TempDir dir;
  const Run run = Launch(dir, "fedensemble");
  CheckClientLevel(run);

  // The daemons trained on the training parts only: each Fed-ensemble
  // participant trains one model for one epoch, so a round's samples are
  // the sum of its participants' training parts, and less than their
  // whole shards.
  auto train = LoadDataset(run.config.data, /*train=*/true, run.config.seed);
  REQUIRE(train.ok());
  const std::vector<ClientSplit> splits = Splits(run.config, *train);
  std::map<int64_t, uint64_t> trained;  // by round, over daemons
  for (const auto& f : std::filesystem::directory_iterator(run.dir + "/daemons"))
    if (f.path().extension() == ".jsonl")
      for (const auto& line : ReadJsonl(f.path().string()))
        trained[line["round"].get<int64_t>()] += line["train_samples"].get<uint64_t>();
  for (const auto& line : run.rounds) {
    const int64_t round = line["round"];
    INFO("round " << round);
    REQUIRE(line["updates_accepted"] == line["participants"].size());
    uint64_t want = 0, whole = 0;
    for (int64_t id : line["participants"]) {
      want += splits[id].train.size();
      whole += splits[id].train.size() + splits[id].held_out.size();
    }
    CHECK(trained[round] == want);
    CHECK(want < whole);
  }
}

TEST_CASE("client-level metrics of a real FedAvg run equal a direct computation") {
  TempDir dir;
  CheckClientLevel(Launch(dir, "fedavg", {"model.num_models=1"}));
}

TEST_CASE("a daemon's shards leave the held-out part out") {
  auto c = ParseConfigWithOverrides(SyntheticConfig(), "t.yaml",
                                    {"eval.client_holdout=0.3"});
  REQUIRE(c.ok());
  auto trainer = LocalTrainer::Create(*c, {0, 5}, c10::Device(c10::kCPU));
  REQUIRE(trainer.ok());
  auto train = LoadDataset(c->data, true, c->seed);
  REQUIRE(train.ok());
  const std::vector<ClientSplit> splits = Splits(*c, *train);
  for (int64_t id : {0, 5}) {
    INFO("client " << id);
    REQUIRE_FALSE(splits[id].held_out.empty());
    CHECK((*trainer)->NumSamples(id) == splits[id].train.size());
  }
  // Off: the whole shard, as before the key existed.
  auto off = ParseConfig(SyntheticConfig(), "t.yaml");
  REQUIRE(off.ok());
  auto plain = LocalTrainer::Create(*off, {5}, c10::Device(c10::kCPU));
  REQUIRE(plain.ok());
  CHECK((*plain)->NumSamples(5) ==
        splits[5].train.size() + splits[5].held_out.size());
}

}  // namespace
}  // namespace shefl
