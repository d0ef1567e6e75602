// The shared vectors of the random streams and the partition
// (tests/data/shard_vectors.json): what the C++ side draws for a set of
// seeds, which samples a client holds under each partition scheme, the
// held-out split, a batch order, and the synthetic data set. The Python
// client (python/tests/test_shards.py) reads the same file and must draw
// the same numbers: no partition is ever sent over the wire, so every
// implementation must compute the same one from the seed.
// This test makes the vectors anew and fails when the file differs; run
// with SHEFL_WRITE_SHARD_VECTORS=1 to rewrite it after a deliberate change.
// LibTorch's headers before Catch's: glog's CHECK must not replace Catch's
// (test_inventory_test).
#include <ATen/ATen.h>

#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/core/rng.h"
#include "common/data/data.h"
#include "common/fed/client_metrics.h"
#include "common/fed/partition.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

const std::string kVectors = std::string(SHEFL_SOURCE_DIR) + "/tests/data/shard_vectors.json";

nlohmann::json Streams() {
  nlohmann::json out = nlohmann::json::array();
  struct S {
    uint64_t seed;
    SeedPurpose purpose;
    std::vector<uint64_t> tags;
  };
  for (const S& s : std::vector<S>{{7, SeedPurpose::kBatchOrder, {3, 5, 1}},
                                   {1, SeedPurpose::kPartition, {1, 60000, 100}},
                                   {0xFFFFFFFFFFFFFFFFull, SeedPurpose::kSynthetic, {}}}) {
    uint64_t seed = DeriveSeed(s.seed, s.purpose, {});
    for (uint64_t t : s.tags) seed = Mix64(seed ^ Mix64(t + 0x632be59bd9b4e019ULL));
    std::mt19937_64 rng(seed);
    std::vector<uint64_t> draws;
    for (int i = 0; i < 700; ++i) draws.push_back(rng());  // past two twists
    std::vector<int64_t> perm(50);
    for (int64_t i = 0; i < 50; ++i) perm[i] = i;
    Shuffle(perm, rng);
    const double normal = StandardNormal(rng);
    out.push_back({{"seed", s.seed},
                   {"purpose", static_cast<uint64_t>(s.purpose)},
                   {"tags", s.tags},
                   {"derived", seed},
                   {"draws_0_5", std::vector<uint64_t>(draws.begin(), draws.begin() + 5)},
                   {"draw_699", draws[699]},
                   {"shuffle_50", perm},
                   {"normal", normal}});
  }
  return out;
}

std::vector<int64_t> Labels(int64_t n) {
  std::vector<int64_t> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = (i * 7 + i / 13) % 10;
  return labels;
}

nlohmann::json Partitions() {
  const std::vector<int64_t> labels = Labels(997);
  nlohmann::json out = nlohmann::json::array();
  struct P {
    std::string name;
    PartitionConfig config;
    int64_t clients;
  };
  auto make = [](std::string scheme, double alpha, int64_t min, int64_t shards, int64_t s) {
    PartitionConfig c;
    c.scheme = scheme;
    c.alpha = alpha;
    c.min_samples = min;
    c.shards = shards;
    c.shards_per_client = s;
    return c;
  };
  const std::vector<P> cases = {
      {"iid", make("iid", 0.6, 1, 400, 4), 10},
      {"dirichlet 0.5", make("dirichlet", 0.5, 5, 400, 4), 10},
      {"dirichlet 0.05, redrawn", make("dirichlet", 0.05, 20, 400, 4), 7},
      {"shards with leftovers", make("shards", 0.6, 1, 40, 3), 12},
  };
  for (const P& p : cases) {
    nlohmann::json clients = nlohmann::json::object();
    for (int64_t c : {int64_t{0}, p.clients / 2, p.clients - 1}) {
      auto idx = ClientIndices(p.config, labels, 10, p.clients, c, 11);
      REQUIRE(idx.ok());
      clients[std::to_string(c)] = *idx;
    }
    out.push_back({{"name", p.name},
                   {"scheme", p.config.scheme},
                   {"alpha", p.config.alpha},
                   {"min_samples", p.config.min_samples},
                   {"shards", p.config.shards},
                   {"shards_per_client", p.config.shards_per_client},
                   {"num_clients", p.clients},
                   {"seed", 11},
                   {"clients", clients}});
  }
  return out;
}

nlohmann::json Holdout() {
  std::vector<int64_t> shard;
  for (int64_t i = 3; i < 400; i += 3) shard.push_back(i);
  auto split = SplitClientShard(shard, 0.2, 11, 4);
  REQUIRE(split.ok());
  return {{"shard", shard}, {"fraction", 0.2}, {"seed", 11}, {"client", 4},
          {"train", split->train}, {"held_out", split->held_out}};
}

nlohmann::json Synthetic() {
  DataConfig c;
  c.dataset = "synthetic";
  c.synthetic_train = 20;
  c.synthetic_features = 5;
  c.synthetic_classes = 3;
  auto d = MakeSynthetic(c, /*train=*/true, 9);
  REQUIRE(d.ok());
  const at::Tensor x = d->x.contiguous();
  std::vector<float> xs(x.data_ptr<float>(), x.data_ptr<float>() + x.numel());
  std::vector<int64_t> ys(d->y.data_ptr<int64_t>(), d->y.data_ptr<int64_t>() + d->y.numel());
  return {{"seed", 9}, {"train", 20}, {"features", 5}, {"classes", 3}, {"x", xs}, {"y", ys}};
}

TEST_CASE("the shared shard vectors are what this build draws") {
  const nlohmann::json v = {{"streams", Streams()},
                            {"labels", "label of sample i: (7 i + floor(i / 13)) mod 10, n = 997"},
                            {"partitions", Partitions()},
                            {"holdout", Holdout()},
                            {"synthetic", Synthetic()}};
  const std::string now = v.dump(1) + "\n";
  if (const char* w = std::getenv("SHEFL_WRITE_SHARD_VECTORS"); w && std::string(w) == "1")
    testing::WriteFile(kVectors, now);
  const std::string file = testing::ReadFile(kVectors);
  INFO("tests/data/shard_vectors.json differs from what this build draws; after a "
       "deliberate change: SHEFL_WRITE_SHARD_VECTORS=1 build/bin/shard_vectors_test");
  CHECK(file == now);
}

}  // namespace
}  // namespace shefl
