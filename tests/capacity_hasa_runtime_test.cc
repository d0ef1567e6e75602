// Capacity levels and HASA (docs/CAPACITY_HASA.md) end to end: a SHEFL run
// with capacity levels through the launcher, and a HASA run through a real
// coordinator and two daemons (one declaring --capacity), checked against the
// allocation and rotation computed here from the same partition; the
// label-count bytes are the same on the daemon's books and the coordinator's.
#include <ATen/Functions.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/data/data.h"
#include "common/fed/capacity.h"
#include "common/fed/config_load.h"
#include "common/fed/hasa.h"
#include "common/fed/partition.h"
#include "common/fed/schedule.h"
#include "common/net/label_counts.h"
#include "shefl.pb.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("a SHEFL run with capacity levels: HPCs train two of three models and every model is trained") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string out = dir / "run";
  auto r = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons",
                       "2", "--threads", "1", "--out", out, "--set",
                       "clients.hpc_capacity=2"},
                      300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto cfg = LoadConfig(dir / "c.yaml", {"clients.hpc_capacity=2"});
  REQUIRE(cfg.ok());
  auto s = Scheduler::Create(*cfg, 1000);
  REQUIRE(s.ok());
  const auto rounds = ReadJsonl(out + "/rounds.jsonl");
  REQUIRE(rounds.size() == 3u);
  for (const auto& line : rounds) {
    const int64_t t = line["round"].get<int64_t>() - 1;
    INFO(line.dump());
    // 2 HPCs x 2 models + 3 LPCs x 1, as planned here.
    CHECK(line["updates_accepted"] == 7);
    std::map<std::string, int64_t> want;
    for (const ClientTask& task : s->Plan(t).tasks)
      want[std::to_string(task.client_id)] = task.models.size();
    std::map<std::string, int64_t> got;
    for (const auto& [id, n] : line["models_by_client"].items())
      got[id] = n.get<int64_t>();
    CHECK(got == want);
    // The two HPC windows (t + c) * 2 mod 3, c = 0, 1, take four slots:
    // every model gets uploads in every round.
    REQUIRE(line["bytes_by_model"].size() == 3u);
    for (const auto& [m, b] : line["bytes_by_model"].items())
      CHECK(b["payload_up"].get<uint64_t>() > 0);
  }
}

std::string HasaConfigText() {
  return R"(name: hasa-test
method: hasa
seed: 5
rounds: 2
round_deadline_s: 120
data:
  dataset: synthetic
  synthetic_train: 800
  synthetic_test: 200
  synthetic_features: 16
  synthetic_classes: 4
partition:
  scheme: dirichlet
  alpha: 0.3
model:
  name: mlp
  num_models: 5
clients:
  num_clients: 8
  num_hpc: 0
  per_round_hpc: 0
  per_round_lpc: 8
train:
  lr: 0.05
  local_epochs: 1
  batch_size: 32
hasa:
  allocation: hasa
)";
}

TEST_CASE("a HASA run through a coordinator and two daemons allocates as computed here") {
  TempDir dir;
  WriteFile(dir / "c.yaml", HasaConfigText());
  const int port = FreePort(), metrics_port = FreePort();
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  // --metrics-linger-s: the final /metrics stays up to be scraped below.
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                       "--listen", addr, "--out", dir / "run", "--threads", "1",
                       "--metrics-listen",
                       "127.0.0.1:" + std::to_string(metrics_port),
                       "--metrics-linger-s", "300", "--insecure"},
                      dir / "c.log");
  // Daemon "a" hosts 0-3 and declares 2 models a round; "b" declares none.
  const int a = Spawn({BinDir() + "/shefl-client", "--coordinator", addr,
                       "--clients", "0-3", "--capacity", "2", "--name", "a",
                       "--out", dir / "run/daemons", "--threads", "1",
                       "--insecure"},
                      dir / "a.log");
  const int b = Spawn({BinDir() + "/shefl-client", "--coordinator", addr,
                       "--clients", "4-7", "--name", "b", "--out",
                       dir / "run/daemons", "--threads", "1", "--insecure"},
                      dir / "b.log");
  INFO(ReadFile(dir / "c.log") << ReadFile(dir / "a.log") << ReadFile(dir / "b.log"));
  CHECK(WaitFor(a, 300) == 0);
  CHECK(WaitFor(b, 60) == 0);
  REQUIRE(WaitUntil([&] { return std::filesystem::exists(dir / "run/summary.json"); }, 60));
  const auto metrics = ParseMetrics(HttpGet(metrics_port, "/metrics"));
  ::kill(c, SIGTERM);  // ends the linger
  REQUIRE(WaitFor(c, 60) == 0);

  // The same histograms here, from the partition every side computes.
  auto cfg = LoadConfig(dir / "c.yaml");
  REQUIRE(cfg.ok());
  auto train = LoadDataset(cfg->data, true, cfg->seed);
  REQUIRE(train.ok());
  auto labels = LabelVector(*train);
  REQUIRE(labels.ok());
  std::vector<double> sizes, declared;
  std::vector<std::vector<uint64_t>> hist;
  for (int64_t id = 0; id < 8; ++id) {
    auto idx = ClientIndices(cfg->partition, *labels, train->num_classes, 8,
                             id, cfg->seed);
    REQUIRE(idx.ok());
    sizes.push_back(static_cast<double>(idx->size()));
    hist.push_back(LabelHistogram(*labels, *idx, train->num_classes));
    declared.push_back(id < 4 ? 2.0 : 0.0);
  }
  auto want = AllocateHasa(cfg->hasa, 5, sizes, hist, declared);
  REQUIRE(want.ok());

  const auto rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(rounds.size() == 2u);
  const auto& h = rounds[0]["hasa"];
  INFO(rounds[0].dump());
  CHECK(h["allocation"] == "hasa");
  CHECK(h["clients_scored"] == 8);
  CHECK(h["budget_realised"].get<double>() == Approx(want->budget));
  for (int64_t id = 0; id < 8; ++id) {
    const auto& got = h["clients"][std::to_string(id)];
    INFO("client " << id);
    CHECK(got["width"].get<double>() == Approx(want->width[id]));
    CHECK(got["score"].get<double>() == Approx(want->score[id]));
    CHECK(got["width"].get<double>() <= (id < 4 ? 0.4 : 0.8) + 1e-12);
  }
  // Each client trained RotatingModels(r_i * M) of the models; all were
  // accepted.
  auto s = Scheduler::Create(*cfg, 1000);
  REQUIRE(s.ok());
  for (const auto& line : rounds) {
    const int64_t t = line["round"].get<int64_t>() - 1;
    int64_t total = 0;
    for (const ClientTask& task :
         s->Plan(t, nullptr, [&](int64_t id) { return want->width[id] * 5; })
             .tasks) {
      CHECK(line["models_by_client"][std::to_string(task.client_id)] ==
            task.models.size());
      total += task.models.size();
    }
    CHECK(line["updates_accepted"] == total);
  }

  // Label-count bytes: the daemon's books, the coordinator's, and the
  // size of the field computed here are one figure per client.
  const auto book_a = nlohmann::json::parse(ReadFile(dir / "run/daemons/a.labels.json"));
  const auto book_b = nlohmann::json::parse(ReadFile(dir / "run/daemons/b.labels.json"));
  const auto& coord = h["label_count_bytes_by_client"];
  uint64_t total = 0;
  for (int64_t id = 0; id < 8; ++id) {
    v1::LogicalClient lc;
    lc.set_client_id(id);
    lc.set_num_samples(static_cast<uint64_t>(sizes[id]));
    lc.set_capacity(id < 4 ? 2 : 0);
    for (uint64_t n : hist[id]) lc.add_label_counts(n);
    const uint64_t bytes = LabelCountBytes(lc);
    const auto& daemon = id < 4 ? book_a : book_b;
    INFO("client " << id);
    CHECK(bytes > 0);
    CHECK(daemon["label_count_bytes"][std::to_string(id)] == bytes);
    CHECK(coord[std::to_string(id)] == bytes);
    total += bytes;
  }
  CHECK(h["label_count_bytes"] == total);

  // /metrics holds the last round's figures.
  const auto& last = rounds.back();
  auto metric = [&](const std::string& key) {
    INFO(key);
    REQUIRE(metrics.count(key) == 1);
    return metrics.at(key);
  };
  CHECK(metric("shefl_hasa_budget{kind=\"target\"}") == Approx(cfg->hasa.budget));
  CHECK(metric("shefl_hasa_budget{kind=\"realised\"}") == Approx(want->budget));
  CHECK(metric("shefl_hasa_clients_scored") == 8);
  CHECK(metric("shefl_hasa_label_count_bytes") == static_cast<double>(total));
  double sum = 0, least = 1e9, most = 0;
  for (const auto& [id, m] : last["models_by_client"].items()) {
    sum += m.get<double>();
    least = std::min(least, m.get<double>());
    most = std::max(most, m.get<double>());
  }
  CHECK(metric("shefl_round_models_per_client{stat=\"mean\"}") ==
        Approx(sum / static_cast<double>(last["models_by_client"].size())));
  CHECK(metric("shefl_round_models_per_client{stat=\"min\"}") == least);
  CHECK(metric("shefl_round_models_per_client{stat=\"max\"}") == most);
}

}  // namespace
}  // namespace shefl
