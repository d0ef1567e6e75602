// The baselines' settings (docs/METHODS.md): Fed-ensemble's `auto` assignment
// is a row shuffle, the baselines upload dense deltas (k = d, checked on the
// bytes of a real run), compression.budget_bytes decides k (or is refused by
// name), train.hpc_local_epochs reaches the HPCs of every method, and a
// trailing batch of one sample is trained on. LibTorch's headers and the
// harness come before Catch (see the harness).
#include "tests/coordinator_harness.h"

#include <ATen/Functions.h>

#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/fed/config_load.h"
#include "common/fed/schedule.h"
#include "common/learn/flat_state.h"
#include "common/learn/models.h"
#include "common/learn/train.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

ExperimentConfig Parse(const std::string& yaml,
                       const std::vector<std::string>& sets = {}) {
  auto c = ParseConfigWithOverrides(yaml, "t.yaml", sets);
  INFO(yaml);
  REQUIRE(c.ok());
  return *c;
}

std::string ErrorOf(const std::string& yaml,
                    const std::vector<std::string>& sets = {}) {
  auto c = ParseConfigWithOverrides(yaml, "t.yaml", sets);
  REQUIRE_FALSE(c.ok());
  return std::string(c.status().message());
}

// ---------------------------------------------------------------- item 1

TEST_CASE("Fed-ensemble's auto assignment is a row shuffle, never latin") {
  // C = 6 rows, M = 3: SHEFL's rule (C_l mod M == 0) would pick latin.
  const std::string clients =
      "clients: {num_clients: 8, num_hpc: 4, per_round_hpc: 2, "
      "per_round_lpc: 4}\n";
  CHECK(*ResolvePermutationForm("auto", "shefl", 6, 3) == PermutationForm::kLatin);

  // Through the real coordinator: the tasks it pushes for one period.
  Harness h("round_deadline_s: 0.5\nrounds: 3\neval: {every: 100}\n"
            "method: fedensemble\n" + clients);
  const ExperimentConfig& cfg = h.coordinator->state().config;
  REQUIRE(cfg.schedule.assignment == "auto");
  REQUIRE(cfg.model.num_models == 3);
  // By hand: six clusters of all eight clients from the seed, one client
  // drawn from each a round; cluster c trains row c of a matrix whose rows
  // are independent shuffles of {0, 1, 2}.
  const Clusters clusters = MakeClusters(cfg.clients, false, cfg.seed);
  REQUIRE(clusters.members.size() == 6u);
  const PermutationMatrix p =
      MakePermutation(PermutationForm::kShuffle, 6, 3, cfg.seed, 0);
  const PermutationMatrix latin =
      MakePermutation(PermutationForm::kLatin, 6, 3, cfg.seed, 0);
  bool unbalanced = false, differs_from_latin = false;
  for (int64_t t = 0; t < 3; ++t) {
    const auto tasks = h.NextTasks(6);
    REQUIRE(tasks.size() == 6u);
    std::map<int64_t, int64_t> want;  // client -> model
    for (const CohortMember& m :
         SampleCohort(cfg.clients, clusters, false, cfg.seed, t)) {
      want[m.client_id] = p.rows[m.cluster][t];
      differs_from_latin |= latin.rows[m.cluster][t] != p.rows[m.cluster][t];
    }
    std::map<int64_t, int> per_model;
    for (const auto& task : tasks) {
      INFO("round " << t + 1 << " client " << task.client_id());
      REQUIRE(task.models_size() == 1);
      REQUIRE(want.count(task.client_id()) == 1u);
      CHECK(task.models(0).model_id() == want[task.client_id()]);
      per_model[task.models(0).model_id()]++;
    }
    // Latin would give every model exactly 6 / 3 = 2 clients each round.
    for (const auto& [model, n] : per_model) unbalanced |= n != 2;
    unbalanced |= per_model.size() != 3u;
  }
  CHECK(unbalanced);  // for this seed the shuffle is visibly not latin
  CHECK(differs_from_latin);
}

// ---------------------------------------------------------------- item 2

TEST_CASE("the baselines' presets are dense and top-k is an explicit option") {
  for (const char* method : {"fedavg", "fedprox", "fedensemble"}) {
    INFO(method);
    ExperimentConfig c = Parse(std::string("method: ") + method + "\n");
    CHECK(c.compression.density == 1.0);
    auto s = Scheduler::Create(c, 582026);
    REQUIRE(s.ok());
    for (const ClientTask& t : s->Plan(0).tasks)
      CHECK(t.k == std::vector<int64_t>(t.models.size(), 582026));
    // The resolved config loads again to the same thing.
    const std::string yaml = ConfigToYaml(c);
    CHECK(ConfigToYaml(Parse(yaml)) == yaml);
    // Top-k on request.
    ExperimentConfig sparse = Parse(std::string("method: ") + method +
                                    "\ncompression: {density: 0.1}\n");
    auto s2 = Scheduler::Create(sparse, 582026);
    REQUIRE(s2.ok());
    for (const ClientTask& t : s2->Plan(0).tasks)
      CHECK(t.k == std::vector<int64_t>(t.models.size(), 58203));
  }
  CHECK(Parse("method: shefl\n").compression.density == 0.1);
}

// A synthetic FedAvg run with the preset density: 8 equal iid shards of
// 150 samples, 5 clients a round, the 16-feature mlp (d = 44,404).
std::string DenseFedAvgConfig() {
  return R"(name: dense-fedavg
method: fedavg
seed: 3
rounds: 2
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
  num_clients: 8
  num_hpc: 4
  per_round_hpc: 2
  per_round_lpc: 3
train:
  lr: 0.05
  local_epochs: 1
  batch_size: 32
)";
}

TEST_CASE("FedAvg uploads dense values: every update is k = d long, on the wire") {
  TempDir dir;
  WriteFile(dir / "c.yaml", DenseFedAvgConfig());
  const std::string out = dir / "run";
  auto r = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons",
                       "2", "--threads", "1", "--out", out},
                      300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(ReadFile(out + "/config.yaml"), Catch::Contains("density: 1\n"));
  const auto rounds = ReadJsonl(out + "/rounds.jsonl");
  REQUIRE(rounds.size() == 2u);
  const uint64_t d = 16 * 200 + 200 + 200 * 200 + 200 + 200 * 4 + 4;
  REQUIRE(d == 44404u);
  std::vector<uint32_t> all(d);
  std::iota(all.begin(), all.end(), 0u);
  // What the codec makes of a dense fp32 delta (today a bitmap and d
  // values; a values-only form when k == d if the codec has one).
  const uint64_t dense = PredictEncodedSize(d, all, ValueType::kFp32);
  CHECK(dense >= 4 * d);
  CHECK(dense <= 4 * d + d / 8 + 16);
  for (const auto& line : rounds) {
    const int64_t round = line["round"];
    INFO("round " << round);
    CHECK(line["updates_accepted"] == 5);
    CHECK(line["updates_rejected"] == 0);
    REQUIRE(line["bytes_by_client"].size() == 5u);
    for (const auto& [client, b] : line["bytes_by_client"].items()) {
      INFO("client " << client);
      // The header the daemon sends with it (a session id is 32 hex
      // characters; the model has been aggregated round - 1 times).
      v1::UploadHeader h;
      h.set_session_id(std::string(32, 'f'));
      h.set_round(round);
      h.set_client_id(std::stoi(client));
      h.set_model_id(0);
      h.set_model_version(round - 1);
      h.set_encoded_size(dense);
      h.set_num_samples(150);
      h.set_train_loss(1.0);  // any non-zero double: 9 bytes
      CHECK(b["payload_up"].get<uint64_t>() ==
            dense + UploadFramingBytes(h, dense));
    }
  }
}

TEST_CASE("the shipped baseline and Figure 7 configs load with their settings") {
  const std::string dir = std::string(SHEFL_SOURCE_DIR) + "/configs/";
  for (const char* name : {"fmnist-fedavg.yaml", "fmnist-fedprox.yaml",
                           "fmnist-fedensemble.yaml"}) {
    INFO(name);
    auto c = LoadConfig(dir + name);
    REQUIRE(c.ok());
    CHECK(c->compression.density == 1.0);
    CHECK(c->clients.per_round_hpc + c->clients.per_round_lpc == 10);
    CHECK(c->train.local_epochs == 10);
  }
  for (const char* name : {"cifar10-fig7-shefl.yaml",
                           "cifar10-fig7-fedensemble-restricted.yaml",
                           "cifar10-fig7-fedavg-allhpc.yaml"}) {
    INFO(name);
    auto c = LoadConfig(dir + name);
    REQUIRE(c.ok());
    CHECK(c->train.local_epochs == 1);
    CHECK(c->train.hpc_local_epochs == 10);
  }
  auto all_hpc = LoadConfig(dir + "cifar10-fig7-fedavg-allhpc.yaml");
  REQUIRE(all_hpc.ok());
  CHECK(all_hpc->clients.num_hpc == all_hpc->clients.num_clients);
}

// ---------------------------------------------------------------- item 3

TEST_CASE("compression.budget_bytes gives the largest k whose encoding fits") {
  // d = 1000, fp32. Above k = d/2 the bitmap (125 bytes) is the smallest
  // worst-case index section (varint gaps take >= k bytes, Elias-Fano
  // k + d bits), and the header is magic, type, format, d (2 varint bytes)
  // and k (2): an encoding of k < d takes at most 132 + 4k bytes.
  // LPC, B = 4000: 132 + 4k <= 4000 -> k_l = 967.
  // HPC with r = 3, M = 5: floor(3 * 4000 / 5) = 2400 a model,
  // 132 + 4k <= 2400 -> k_h = 567.
  ExperimentConfig c = Parse(
      "compression: {budget_bytes: 4000, resource_ratio: 3}\n"
      "model: {num_models: 5}\n");
  auto ks = KsForBudget(c, 1000);
  REQUIRE(ks.ok());
  CHECK(ks->k_lpc == 967);
  CHECK(ks->k_hpc == 567);
  CHECK(PredictEncodedSizeUpperBound(1000, 967, ValueType::kFp32) == 4000u);
  CHECK(PredictEncodedSizeUpperBound(1000, 568, ValueType::kFp32) == 2404u);
  auto s = Scheduler::Create(c, 1000);
  REQUIRE(s.ok());
  for (const ClientTask& t : s->Plan(0).tasks)
    CHECK(t.k == std::vector<int64_t>(t.models.size(),
                                      t.tier == Tier::kHpc ? 567 : 967));
  // r = M (the default): an HPC's 5 budgets over 5 models, k_h = k_l.
  auto same = KsForBudget(Parse("compression: {budget_bytes: 4000}\n"), 1000);
  REQUIRE(same.ok());
  CHECK(same->k_hpc == 967);
  // A baseline client has the budget for its one model, whatever its tier.
  ExperimentConfig ens = Parse("method: fedensemble\n"
                               "compression: {budget_bytes: 4000, "
                               "resource_ratio: 3}\n");
  auto s_ens = Scheduler::Create(ens, 1000);
  REQUIRE(s_ens.ok());
  for (const ClientTask& t : s_ens->Plan(0).tasks)
    CHECK(t.k == std::vector<int64_t>{967});
  // fp16 values: 132 + 2k <= 2000 -> 934.
  auto half = KsForBudget(
      Parse("compression: {budget_bytes: 2000, value_type: fp16}\n"), 1000);
  REQUIRE(half.ok());
  CHECK(half->k_lpc == 934);
  // A budget that holds the dense encoding (at most 132 + 4 * 1000 bytes)
  // gives k = d.
  auto dense = KsForBudget(Parse("compression: {budget_bytes: 4132}\n"), 1000);
  REQUIRE(dense.ok());
  CHECK(dense->k_lpc == 1000);
}

TEST_CASE("budgets that make no sense are refused by the key's name") {
  // k = 1 of d = 1000 needs a 6-byte header, an index and 4 value bytes.
  const uint64_t one = PredictEncodedSizeUpperBound(1000, 1, ValueType::kFp32);
  REQUIRE(one > 10u);
  auto tiny = Scheduler::Create(Parse("compression: {budget_bytes: 10}\n"), 1000);
  REQUIRE_FALSE(tiny.ok());
  CHECK_THAT(std::string(tiny.status().message()),
             Catch::Contains("compression.budget_bytes") &&
                 Catch::Contains("k = 1 needs " + std::to_string(one) + " bytes"));
  // Enough for an LPC, but r = 1 splits 20 bytes over 5 models: 4 each.
  REQUIRE(one <= 20u);
  auto hpc = Scheduler::Create(
      Parse("compression: {budget_bytes: 20, resource_ratio: 1}\n"), 1000);
  REQUIRE_FALSE(hpc.ok());
  CHECK_THAT(std::string(hpc.status().message()),
             Catch::Contains("compression.budget_bytes") &&
                 Catch::Contains("HPC"));
  // A density other than the method's default beside a budget: which one?
  const std::string both =
      ErrorOf("compression:\n  density: 0.02\n  budget_bytes: 4000\n");
  CHECK_THAT(both, Catch::Contains("t.yaml:3") &&
                       Catch::Contains("compression.budget_bytes") &&
                       Catch::Contains("compression.density"));
  CHECK_THAT(ErrorOf("method: fedavg\ncompression: {density: 0.1, "
                     "budget_bytes: 4000}\n"),
             Catch::Contains("compression.budget_bytes"));
  // The method's default density may stand beside it, so the resolved
  // config (both keys written) loads again.
  ExperimentConfig ok = Parse("compression: {budget_bytes: 4000}\n");
  const std::string yaml = ConfigToYaml(ok);
  CHECK_THAT(yaml, Catch::Contains("budget_bytes: 4000"));
  CHECK(ConfigToYaml(Parse(yaml)) == yaml);
  CHECK(Parse("method: fedprox\n", {"compression.budget_bytes=9000"})
            .compression.budget_bytes == 9000);
}

TEST_CASE("a run with a budget too small for one value stops at start naming the key") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig("  budget_bytes: 10\n"));
  auto r = RunProcess({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                       "--listen", "127.0.0.1:0", "--insecure", "--out",
                       dir / "run"},
                      120);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("key 'compression.budget_bytes': 10 bytes "
                                       "cannot carry one fp32 value"));
}

// ---------------------------------------------------------------- item 4

TEST_CASE("hpc_local_epochs reaches the HPCs of Fed-ensemble and FedAvg") {
  // Restricted Fed-ensemble (000, Figure 7): HPCs (clients 0-3) train their
  // one assigned model for 10 epochs, LPCs for 1.
  {
    Harness h("round_deadline_s: 0.5\nrounds: 3\neval: {every: 100}\n"
              "method: fedensemble\n"
              "train: {local_epochs: 1, hpc_local_epochs: 10}\n");
    int hpc = 0, lpc = 0;
    for (int round = 1; round <= 3; ++round) {
      for (const auto& t : h.NextTasks()) {
        INFO("round " << round << " client " << t.client_id());
        REQUIRE(t.models_size() == 1);  // the method's assignment stands
        const bool is_hpc = t.client_id() < 4;
        (is_hpc ? hpc : lpc)++;
        CHECK(t.train().local_epochs() == (is_hpc ? 10u : 1u));
      }
    }
    CHECK(hpc > 0);
    CHECK(lpc > 0);
  }
  // All-HPC FedAvg: every client an HPC, every task 10 epochs.
  {
    Harness h("round_deadline_s: 0.5\nrounds: 2\neval: {every: 100}\n"
              "method: fedavg\nmodel: {num_models: 1}\n"
              "clients: {num_hpc: 8}\n"
              "train: {local_epochs: 1, hpc_local_epochs: 10}\n");
    const auto tasks = h.NextTasks();
    REQUIRE(tasks.size() == 5u);
    for (const auto& t : tasks) {
      CHECK(t.models_size() == 1);
      CHECK(t.train().local_epochs() == 10u);
    }
  }
  CHECK_THAT(ErrorOf("clients: {num_hpc: 0, per_round_hpc: 0}\n"
                     "method: fedavg\ntrain: {hpc_local_epochs: 3}\n"),
             Catch::Contains("train.hpc_local_epochs"));
}

// ---------------------------------------------------------------- item 6

Dataset Features(int64_t n) {
  at::manual_seed(5);
  at::Tensor y = at::randint(4, {n}, at::kLong);
  at::Tensor x = at::randn({4, 20}).index_select(0, y) + at::randn({n, 20});
  return {"features", x, y, 4};
}

Dataset Images(int64_t n, int64_t side) {
  at::manual_seed(5);
  at::Tensor y = at::randint(10, {n}, at::kLong);
  return {"images", at::randn({n, 3, side, side}), y, 10};
}

std::shared_ptr<Net> Model(const std::string& name, const Dataset& d) {
  auto shape = ShapeOf(d, 0);
  REQUIRE(shape.ok());
  auto m = MakeInitialisedModel(name, *shape, 3, 0);
  REQUIRE(m.ok());
  return *m;
}

std::vector<int64_t> All(const Dataset& d) {
  std::vector<int64_t> v(d.size());
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TrainConfig Batch(int64_t b) {
  TrainConfig c;
  c.batch_size = b;
  c.lr = 0.01;
  return c;
}

LocalTrainParams OneEpoch(const TrainConfig& cfg) {
  return MakeLocalTrainParams(cfg, 11, 0, 0, 0, false, c10::Device(c10::kCPU));
}

TEST_CASE("a shard with n mod batch == 1 trains on all n samples") {
  Dataset d = Features(49);  // 16 + 16 + 16 + 1
  auto m = Model("mlp", d);
  auto stats = LocalTrain(*m, d, All(d), Batch(16), OneEpoch(Batch(16)));
  REQUIRE(stats.ok());
  CHECK(stats->steps == 4);
  CHECK(stats->samples == 49);
}

TEST_CASE("a ResNet trains on a lone sample where BatchNorm can, else folds it in") {
  // 16x16 inputs leave the last block 2x2: one sample gives BatchNorm 4
  // values per channel, so it is a batch of its own (PyTorch's way).
  Dataset wide = Images(5, 16);
  auto a = Model("resnet18", wide);
  auto s = LocalTrain(*a, wide, All(wide), Batch(4), OneEpoch(Batch(4)));
  REQUIRE(s.ok());
  CHECK(s->steps == 2);
  CHECK(s->samples == 5);
  // 8x8 inputs leave it 1x1, where BatchNorm refuses one sample in train
  // mode (PyTorch stops there): the sample joins the batch before it, so
  // the pass equals one batch of 5 in the same order, buffers (running
  // statistics) included: the probe that found out left no trace.
  Dataset tiny = Images(5, 8);
  auto folded = Model("resnet18", tiny);
  auto f = LocalTrain(*folded, tiny, All(tiny), Batch(4), OneEpoch(Batch(4)));
  REQUIRE(f.ok());
  CHECK(f->steps == 1);
  CHECK(f->samples == 5);
  auto whole = Model("resnet18", tiny);
  // Batch 5 draws the same shuffle (it depends on the seed and n only).
  auto w = LocalTrain(*whole, tiny, All(tiny), Batch(5), OneEpoch(Batch(5)));
  REQUIRE(w.ok());
  CHECK(at::equal(Flatten(*folded), Flatten(*whole)));
}

}  // namespace
}  // namespace shefl
