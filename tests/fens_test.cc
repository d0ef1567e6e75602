// FENS (002; docs/FENS.md): one round in which every client
// trains the one initial model and uploads it once, dense; the coordinator
// keeps the client models as the ensemble and fits its aggregator on a
// proxy split it holds back from the partition; the aggregator's size is
// booked. LibTorch's headers and the harness come before Catch.
#include "tests/coordinator_harness.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/data/data.h"
#include "common/fed/client_metrics.h"
#include "common/fed/config_load.h"
#include "common/fed/fens_split.h"
#include "common/fed/partition.h"
#include "common/learn/fens_aggregators.h"
#include "common/learn/flat_state.h"
#include "common/learn/models.h"
#include "common/net/wire.h"
#include "common/sparse/codec.h"
#include "server/round/fens_round.h"
#include "server/run/model_store.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

ExperimentConfig Parse(const std::string& yaml) {
  auto c = ParseConfigWithOverrides(yaml, "t.yaml", {});
  INFO(yaml << (c.ok() ? "" : std::string(c.status().message())));
  REQUIRE(c.ok());
  return *c;
}

std::string ErrorOf(const std::string& yaml) {
  auto c = ParseConfigWithOverrides(yaml, "t.yaml", {});
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

TEST_CASE("fens presets one dense round of every client and refuses the rest") {
  const ExperimentConfig c =
      Parse("method: fens\nclients: {num_clients: 7, num_hpc: 0}\n");
  CHECK(c.rounds == 1);
  CHECK(c.model.num_models == 1);
  CHECK(c.clients.per_round_hpc + c.clients.per_round_lpc == 7);
  CHECK(c.compression.density == 1.0);
  CHECK(c.aggregation.rule == "uniform");
  CHECK(c.fens.aggregator == "nn");
  CHECK(c.fens.hidden_units == 120);
  const std::string yaml = ConfigToYaml(c);
  CHECK(ConfigToYaml(Parse(yaml)) == yaml);

  CHECK_THAT(ErrorOf("method: fens\nrounds: 3\n"),
             Catch::Contains("key 'rounds'"));
  CHECK_THAT(ErrorOf("method: fens\nmodel: {num_models: 3}\n"),
             Catch::Contains("key 'model.num_models'"));
  CHECK_THAT(ErrorOf("method: fens\nclients: {num_clients: 10, "
                     "per_round_lpc: 4}\n"),
             Catch::Contains("key 'clients.per_round_lpc'"));
  CHECK_THAT(ErrorOf("method: fens\nclients: {over_selection: 0.5}\n"),
             Catch::Contains("key 'clients.over_selection'"));
  CHECK_THAT(ErrorOf("method: fens\nfens: {aggregator: median}\n"),
             Catch::Contains("fens.aggregator"));
  CHECK_THAT(ErrorOf("method: fens\neval: {gamma: 0.5}\n"),
             Catch::Contains("key 'eval.gamma'"));
  CHECK(Parse("method: fens\neval: {client_holdout: 0.2}\n")
            .eval.client_holdout == 0.2);
}

TEST_CASE("the proxy split is seeded and the partition covers only the rest") {
  const ProxySplit a = SplitProxy(1000, 0.1, 5);
  CHECK(a.proxy.size() == 100u);
  CHECK(a.rest.size() == 900u);
  CHECK(SplitProxy(1000, 0.1, 5).proxy == a.proxy);
  CHECK(SplitProxy(1000, 0.1, 6).proxy != a.proxy);
  CHECK(std::is_sorted(a.proxy.begin(), a.proxy.end()));
  std::vector<int64_t> all = a.proxy;
  all.insert(all.end(), a.rest.begin(), a.rest.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 1000; ++i) REQUIRE(all[i] == i);
  CHECK(SplitProxy(1000, 0, 5).proxy.empty());

  ExperimentConfig c = Parse(
      "method: fens\nseed: 5\npartition: {scheme: dirichlet, alpha: 0.5}\n"
      "clients: {num_clients: 6, num_hpc: 0}\n");
  std::vector<int64_t> labels(1000);
  for (int64_t i = 0; i < 1000; ++i) labels[i] = (i * 7) % 4;
  auto shards = AllTrainingIndices(c, labels, 4);
  REQUIRE(shards.ok());
  std::vector<int64_t> seen;
  for (int64_t j = 0; j < 6; ++j) {
    auto one = TrainingIndices(c, labels, 4, j);
    REQUIRE(one.ok());
    CHECK(*one == (*shards)[j]);
    seen.insert(seen.end(), one->begin(), one->end());
  }
  std::sort(seen.begin(), seen.end());
  CHECK(seen == a.rest);  // every non-proxy sample once, no proxy sample
  // Other methods partition the whole set, as before.
  c.method = "fedavg";
  auto whole = ClientIndices(c.partition, labels, 4, 6, 2, c.seed);
  REQUIRE(whole.ok());
  CHECK(*TrainingIndices(c, labels, 4, 2) == *whole);
}

// Members of which only the first is informative: it gives the true class
// 0.6 (the rest spread evenly); the others put 0.9 on a class of their own
// drawn at random per sample, so they outvote it in the mean.
struct Constructed {
  at::Tensor probs;   // [M, N, C]
  at::Tensor labels;  // [N]
};

Constructed MakeConstructed(int64_t m, int64_t n, int64_t c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> p(m * n * c);
  std::vector<int64_t> y(n);
  for (int64_t s = 0; s < n; ++s) {
    y[s] = rng() % c;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t top = i == 0 ? y[s] : static_cast<int64_t>(rng() % c);
      const float peak = i == 0 ? 0.6f : 0.9f;
      for (int64_t k = 0; k < c; ++k)
        p[(i * n + s) * c + k] = k == top ? peak : (1 - peak) / (c - 1);
    }
  }
  return {at::from_blob(p.data(), {m, n, c}, at::kFloat).clone(),
          at::from_blob(y.data(), {n}, at::kLong).clone()};
}

double Accuracy(const at::Tensor& probs, const at::Tensor& labels) {
  return probs.argmax(1).eq(labels).to(at::kDouble).mean().item<double>();
}

TEST_CASE("the NN aggregator beats the mean when only some members inform") {
  const int64_t m = 4, c = 5;
  const Constructed proxy = MakeConstructed(m, 1000, c, 1);
  const Constructed test = MakeConstructed(m, 1000, c, 2);
  FensConfig cfg;
  cfg.epochs = 40;
  cfg.lr = 3e-3;
  cfg.batch_size = 32;
  const std::vector<std::vector<int64_t>> counts(m, std::vector<int64_t>(c, 10));

  const double mean = Accuracy(MeanAggregator()->Combine(test.probs), test.labels);
  CHECK(mean < 0.5);  // the three uninformed members outvote the first
  auto nn = FitAggregator(cfg, 9, proxy.probs, proxy.labels, counts);
  REQUIRE(nn.ok());
  CHECK((*nn)->name() == "nn");
  CHECK((*nn)->num_params() == (m * c) * 120 + 120 + 120 * c + c);
  const at::Tensor out = (*nn)->Combine(test.probs);
  CHECK(out.sizes() == at::IntArrayRef({1000, c}));
  CHECK(out.sum(1).sub(1).abs().max().item<double>() < 1e-5);
  const double nn_acc = Accuracy(out, test.labels);
  INFO("mean " << mean << ", nn " << nn_acc);
  CHECK(nn_acc > 0.95);
  CHECK(nn_acc > mean + 0.3);

  // The same seed fits the same aggregator.
  auto again = FitAggregator(cfg, 9, proxy.probs, proxy.labels, counts);
  REQUIRE(again.ok());
  CHECK(at::equal((*again)->Combine(test.probs), out));

  cfg.aggregator = "linear";
  auto lin = FitAggregator(cfg, 9, proxy.probs, proxy.labels, counts);
  REQUIRE(lin.ok());
  CHECK((*lin)->num_params() == m * c + c);
  CHECK(Accuracy((*lin)->Combine(test.probs), test.labels) > mean + 0.3);

  // A trainable aggregator needs a proxy set.
  auto none = FitAggregator(cfg, 9, proxy.probs.slice(1, 0, 0),
                            proxy.labels.slice(0, 0, 0), counts);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(std::string(none.status().message()),
             Catch::Contains("fens.proxy_fraction"));
}

TEST_CASE("the weighted aggregator weighs each class by who has seen it") {
  // Member 0 saw only class 0, member 1 only class 1: each is trusted on
  // its own class alone (002 Eq. 5 with per-class counts).
  FensConfig cfg;
  cfg.aggregator = "weighted";
  const std::vector<std::vector<int64_t>> counts = {{30, 0, 10}, {0, 50, 30}};
  auto w = FitAggregator(cfg, 1, at::zeros({2, 1, 3}), at::zeros({1}, at::kLong),
                         counts);
  REQUIRE(w.ok());
  CHECK((*w)->num_params() == 6);
  // Sample: member 0 says class 1 (0.8), member 1 says class 0 (0.8).
  std::vector<float> p = {0.1f, 0.8f, 0.1f, 0.8f, 0.1f, 0.1f};
  const at::Tensor probs = at::from_blob(p.data(), {2, 1, 3}, at::kFloat);
  const at::Tensor out = (*w)->Combine(probs);
  // Unnormalised: class 0: 1 * 0.1, class 1: 1 * 0.1, class 2:
  // 0.25 * 0.1 + 0.75 * 0.1 = 0.1: all 0.1, so 1/3 each.
  for (int k = 0; k < 3; ++k)
    CHECK(out[0][k].item<float>() == Approx(1.0 / 3).margin(1e-6));
  const std::vector<std::vector<int64_t>> missing = {{1, 0, 1}, {1, 0, 1}};
  auto bad = FitAggregator(cfg, 1, at::zeros({2, 1, 3}),
                           at::zeros({1}, at::kLong), missing);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("class 1"));
}

TEST_CASE("a FENS line books the aggregator's bytes") {
  const ExperimentConfig c = Parse("method: fens\nclients: {num_clients: 5, num_hpc: 0}\n");
  FensResult r;
  r.aggregator = "nn";
  r.aggregator_params = 1000;
  r.ensemble.ensemble_accuracy = 0.75;
  r.mean.ensemble_accuracy = 0.5;
  nlohmann::json line = {{"bytes_up", 1}};
  AddFensFields(c, /*dim=*/100, r, {0, 1, 2, 3, 4}, &line);
  CHECK(line["bytes_up"] == 1);  // extended, nothing renamed
  CHECK(line["aggregator_params"] == 1000);
  CHECK(line["aggregator_bytes"] == 4000);
  CHECK(line["aggregator_bytes_down"] == 5 * 4000);
  CHECK(line["deployment_bytes_down"] == 5 * (5 * 400 + 4000));
  CHECK(line["fens"]["members"] == 5);
  CHECK(line["fens"]["mean_accuracy"] == 0.5);
  nlohmann::json summary = nlohmann::json::object();
  AddFensSummary(line, &summary);
  CHECK(summary["total_aggregator_bytes_down"] == 20000);
  CHECK(summary["fens"]["aggregator"] == "nn");
}

// 6 clients, iid shards of 180 of the 1080 non-proxy samples, the
// 16-feature mlp (d = 44,404), two daemons.
std::string FensRunConfig() {
  return R"(name: fens-run
method: fens
seed: 3
round_deadline_s: 120
data:
  dataset: synthetic
  synthetic_train: 1200
  synthetic_test: 200
  synthetic_features: 16
  synthetic_classes: 4
partition:
  scheme: iid
model:
  name: mlp
clients:
  num_clients: 6
  num_hpc: 0
train:
  lr: 0.05
  local_epochs: 2
fens:
  aggregator: nn
  proxy_fraction: 0.1
  epochs: 30
  lr: 0.003
)";
}

TEST_CASE("a FENS run uploads one dense model per client and books it") {
  TempDir dir;
  WriteFile(dir / "c.yaml", FensRunConfig());
  const std::string out = dir / "run";
  auto r = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons",
                       "2", "--threads", "1", "--insecure", "--out", out},
                      300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto rounds = ReadJsonl(out + "/rounds.jsonl");
  REQUIRE(rounds.size() == 1u);
  const auto& line = rounds[0];
  CHECK(line["participants"] == std::vector<int64_t>{0, 1, 2, 3, 4, 5});
  CHECK(line["updates_accepted"] == 6);
  CHECK(line["updates_rejected"] == 0);
  CHECK(line["bytes_by_model"].size() == 1u);

  // Each client's upload: one dense fp32 model, exactly.
  const uint64_t d = 16 * 200 + 200 + 200 * 200 + 200 + 200 * 4 + 4;
  std::vector<uint32_t> all(d);
  std::iota(all.begin(), all.end(), 0u);
  const uint64_t dense = PredictEncodedSize(d, all, ValueType::kFp32);
  REQUIRE(line["bytes_by_client"].size() == 6u);
  std::map<std::string, uint64_t> coordinator_up;
  for (const auto& [client, b] : line["bytes_by_client"].items()) {
    INFO("client " << client);
    v1::UploadHeader h;
    h.set_session_id(std::string(32, 'f'));
    h.set_round(1);
    h.set_client_id(std::stoi(client));
    h.set_model_id(0);
    h.set_model_version(0);
    h.set_encoded_size(dense);
    h.set_num_samples(180);
    h.set_train_loss(1.0);
    CHECK(b["payload_up"].get<uint64_t>() ==
          dense + UploadFramingBytes(h, dense));
    coordinator_up[client] = b["payload_up"];
  }
  // The daemons' books say the same, client by client.
  std::map<std::string, uint64_t> daemon_up;
  uint64_t samples = 0;
  for (const auto& e : std::filesystem::directory_iterator(out + "/daemons"))
    if (e.path().extension() == ".jsonl")
      for (const auto& dl : ReadJsonl(e.path())) {
        if (dl["round"] != 1) continue;
        samples += dl["train_samples"].get<uint64_t>();
        for (const auto& [client, b] : dl["bytes_by_client"].items())
          daemon_up[client] += b["payload_up"].get<uint64_t>();
      }
  CHECK(daemon_up == coordinator_up);
  CHECK(samples == 2u * 1080u);  // 2 local epochs over every non-proxy sample

  // The ensemble: six members, the NN aggregator and its bytes.
  const uint64_t q = (6 * 4) * 120 + 120 + 120 * 4 + 4;
  CHECK(line["aggregator_params"] == q);
  CHECK(line["aggregator_bytes"] == 4 * q);
  CHECK(line["aggregator_bytes_down"] == 6 * 4 * q);
  CHECK(line["deployment_bytes_down"] == 6 * (6 * 4 * d + 4 * q));
  CHECK(line["fens"]["aggregator"] == "nn");
  CHECK(line["fens"]["members"] == 6);
  CHECK(line["fens"]["proxy_samples"] == 120);
  CHECK(line["model_accuracy"].size() == 6u);
  CHECK(line["ensemble_accuracy"] == line["fens"]["aggregator_accuracy"]);
  CHECK(line["fens"]["mean_accuracy"].get<double>() > 0.5);
  CHECK(line["ensemble_accuracy"].get<double>() > 0.5);

  const auto summary = nlohmann::json::parse(ReadFile(out + "/summary.json"));
  CHECK(summary["method"] == "fens");
  CHECK(summary["model_sha256"].size() == 6u);
  CHECK(summary["total_aggregator_bytes_down"] == 6 * 4 * q);
  CHECK(summary["fens"]["members"] == 6);
  CHECK(summary["final_accuracy"] == line["ensemble_accuracy"]);
}

TEST_CASE("a FENS run scores its aggregated ensemble on every client's held-out split") {
  TempDir dir;
  WriteFile(dir / "c.yaml", FensRunConfig());
  const std::string out = dir / "run";
  auto r = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons",
                       "2", "--threads", "1", "--insecure", "--out", out,
                       "--set", "eval.client_holdout=0.25", "--set",
                       "fens.aggregator=mean"},
                      300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const auto rounds = ReadJsonl(out + "/rounds.jsonl");
  REQUIRE(rounds.size() == 1u);
  const auto& line = rounds[0];
  INFO(line.dump());

  // Here: the six members from the checkpoint, each client's split of its
  // non-proxy shard, and the mean of the members' probabilities.
  auto c = LoadConfig(out + "/config.yaml");
  REQUIRE(c.ok());
  auto train = LoadDataset(c->data, true, c->seed);
  REQUIRE(train.ok());
  auto labels = LabelVector(*train);
  REQUIRE(labels.ok());
  auto shards = AllTrainingIndices(*c, *labels, train->num_classes);
  REQUIRE(shards.ok());
  auto ckpt = ModelStore::LoadCheckpoint(out + "/checkpoints/latest.ckpt");
  REQUIRE(ckpt.ok());
  REQUIRE(ckpt->first->num_models() == 6);
  auto shape = ShapeOf(*train, c->data.text_vocab);
  REQUIRE(shape.ok());
  std::vector<std::shared_ptr<Net>> nets;
  for (int64_t m = 0; m < 6; ++m) {
    auto net = MakeModel(c->model.name, *shape);
    REQUIRE(net.ok());
    REQUIRE(Unflatten(*ckpt->first->Get(m), **net).ok());
    (*net)->eval();
    nets.push_back(*net);
  }
  c10::NoGradGuard no_grad;
  std::vector<double> accuracy;
  uint64_t held = 0, trained = 0;
  for (int64_t id = 0; id < 6; ++id) {
    auto s = SplitClientShard((*shards)[id], 0.25, c->seed, id);
    REQUIRE(s.ok());
    REQUIRE_FALSE(s->held_out.empty());
    held += s->held_out.size();
    trained += s->train.size();
    const at::Tensor idx = at::tensor(s->held_out, at::kLong);
    const at::Tensor x = train->x.index_select(0, idx);
    at::Tensor mean = at::zeros({idx.size(0), 4}, at::kDouble);
    for (const auto& net : nets) mean += net->forward(x).softmax(1).to(at::kDouble) / 6;
    const at::Tensor right = mean.argmax(1).eq(train->y.index_select(0, idx));
    accuracy.push_back(right.sum().item<double>() / idx.size(0));
  }
  const ClientLevelSummary want = SummariseClients(accuracy);
  CHECK(line["clients_evaluated"] == 6);
  CHECK(line["client_eval_samples"] == held);
  CHECK(line["client_mean_accuracy"].get<double>() == Approx(want.mean).margin(1e-9));
  CHECK(line["client_worst_accuracy"].get<double>() == Approx(want.worst).margin(1e-9));
  CHECK(line["client_p10_accuracy"].get<double>() == Approx(want.p10).margin(1e-9));
  CHECK_FALSE(line.contains("personal_weight_entropy"));
  // The daemons trained on the training parts only (2 local epochs).
  uint64_t samples = 0;
  for (const auto& e : std::filesystem::directory_iterator(out + "/daemons"))
    if (e.path().extension() == ".jsonl")
      for (const auto& dl : ReadJsonl(e.path())) samples += dl["train_samples"].get<uint64_t>();
  CHECK(samples == 2 * trained);
  CHECK(trained + held == 1080u);
}

}  // namespace
}  // namespace shefl
