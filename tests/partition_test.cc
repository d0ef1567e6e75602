#include "common/fed/partition.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/fed/config_load.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// n labels cycling through num_classes, in a scrambled but fixed order.
std::vector<int64_t> MakeLabels(int64_t n, int64_t num_classes) {
  std::vector<int64_t> labels(n);
  for (int64_t i = 0; i < n; ++i) labels[i] = (i * 7 + i / 3) % num_classes;
  return labels;
}

PartitionConfig Scheme(const std::string& scheme) {
  PartitionConfig c;
  c.scheme = scheme;
  return c;
}

// Every index in [0, n) appears in exactly one client's list.
void CheckCover(const std::vector<std::vector<int64_t>>& parts, int64_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& part : parts) {
    CHECK(std::is_sorted(part.begin(), part.end()));
    for (int64_t i : part) {
      REQUIRE(i >= 0);
      REQUIRE(i < n);
      seen[i]++;
    }
  }
  for (int64_t i = 0; i < n; ++i) REQUIRE(seen[i] == 1);
}

// Mean over clients of (largest class count / client size).
double MeanMaxShare(const std::vector<std::vector<int64_t>>& parts,
                    const std::vector<int64_t>& labels, int64_t k) {
  double sum = 0;
  for (const auto& part : parts) {
    auto counts = LabelCounts(labels, part, k);
    sum += static_cast<double>(*std::max_element(counts.begin(), counts.end())) /
           static_cast<double>(part.size());
  }
  return sum / static_cast<double>(parts.size());
}

void CheckInvalid(const absl::Status& status, const std::string& name) {
  INFO(status.ToString());
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(status.message()).find(name) != std::string::npos);
}

}  // namespace

TEST_CASE("every sample lands in exactly one client") {
  const auto labels = MakeLabels(1003, 10);
  PartitionConfig shards = Scheme("shards");
  shards.shards = 60;
  shards.shards_per_client = 3;
  for (const auto& config : {Scheme("iid"), Scheme("dirichlet"), shards}) {
    INFO(config.scheme);
    auto parts = Partition(config, labels, 10, 20, 5);
    REQUIRE(parts.ok());
    REQUIRE(parts->size() == 20);
    CheckCover(*parts, 1003);
  }
}

TEST_CASE("ClientIndices equals Partition for every client") {
  const auto labels = MakeLabels(777, 7);
  PartitionConfig shards = Scheme("shards");
  shards.shards = 50;  // > 12 * 4: two leftover shards dealt round-robin
  shards.shards_per_client = 4;
  PartitionConfig skewed = Scheme("dirichlet");
  skewed.alpha = 0.05;
  for (const auto& config : {Scheme("iid"), Scheme("dirichlet"), skewed,
                             shards}) {
    INFO(config.scheme << " alpha " << config.alpha);
    auto parts = Partition(config, labels, 7, 12, 42);
    REQUIRE(parts.ok());
    CheckCover(*parts, 777);
    for (int64_t j = 0; j < 12; ++j) {
      auto one = ClientIndices(config, labels, 7, 12, j, 42);
      REQUIRE(one.ok());
      CHECK(*one == (*parts)[j]);
    }
    // A daemon's clients from one plan (any order, any subset).
    const std::vector<int64_t> mine = {11, 0, 5, 3};
    auto some = ClientsIndices(config, labels, 7, 12, mine, 42);
    REQUIRE(some.ok());
    REQUIRE(some->size() == mine.size());
    for (size_t i = 0; i < mine.size(); ++i) CHECK((*some)[i] == (*parts)[mine[i]]);
    CHECK_FALSE(ClientsIndices(config, labels, 7, 12, {3, 12}, 42).ok());
  }
}

TEST_CASE("partitions are deterministic from the seed") {
  const auto labels = MakeLabels(2000, 10);
  PartitionConfig shards = Scheme("shards");
  shards.shards = 40;
  shards.shards_per_client = 2;
  for (const auto& config : {Scheme("iid"), Scheme("dirichlet"), shards}) {
    INFO(config.scheme);
    auto a = Partition(config, labels, 10, 20, 7);
    auto b = Partition(config, labels, 10, 20, 7);
    auto c = Partition(config, labels, 10, 20, 8);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(c.ok());
    CHECK(*a == *b);
    CHECK(*a != *c);
  }
}

TEST_CASE("a fixed seed gives a fixed split (golden values)") {
  // Daemons built at different times must agree on the split: a change to
  // the scheme or the random streams has to show up here.
  const auto labels = MakeLabels(30, 3);
  auto iid = ClientIndices(Scheme("iid"), labels, 3, 4, 1, 1);
  auto dir = ClientIndices(Scheme("dirichlet"), labels, 3, 4, 1, 1);
  REQUIRE(iid.ok());
  REQUIRE(dir.ok());
  CHECK(*iid == std::vector<int64_t>{0, 3, 7, 8, 21, 24, 26, 27});
  CHECK(*dir == std::vector<int64_t>{3, 4, 7, 11, 14, 16, 20, 23, 26});
}

TEST_CASE("iid sizes differ by at most one") {
  const auto labels = MakeLabels(1001, 10);
  auto parts = Partition(Scheme("iid"), labels, 10, 7, 3);
  REQUIRE(parts.ok());
  for (const auto& part : *parts) {
    CHECK(part.size() >= 1001 / 7);
    CHECK(part.size() <= 1001 / 7 + 1);
  }
}

TEST_CASE("small alpha skews labels more than large alpha") {
  const auto labels = MakeLabels(10000, 10);
  PartitionConfig skewed = Scheme("dirichlet");
  skewed.alpha = 0.1;
  PartitionConfig flat = Scheme("dirichlet");
  flat.alpha = 100;
  auto a = Partition(skewed, labels, 10, 50, 1);
  auto b = Partition(flat, labels, 10, 50, 1);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const double skewed_share = MeanMaxShare(*a, labels, 10);
  const double flat_share = MeanMaxShare(*b, labels, 10);
  INFO("alpha 0.1: " << skewed_share << ", alpha 100: " << flat_share);
  CHECK(skewed_share > 0.5);
  CHECK(flat_share < 0.2);
  // A near-uniform Dirichlet also gives near-equal client sizes.
  for (const auto& part : *b) {
    CHECK(part.size() > 150);
    CHECK(part.size() < 250);
  }
}

TEST_CASE("shards give each client s label-sorted shards") {
  // 10 classes x 100 samples, 40 shards of 25: a shard holds one class.
  std::vector<int64_t> labels(1000);
  for (int i = 0; i < 1000; ++i) labels[i] = (i * 3) % 10;
  PartitionConfig config = Scheme("shards");
  config.shards = 40;
  config.shards_per_client = 2;
  auto parts = Partition(config, labels, 10, 20, 9);
  REQUIRE(parts.ok());
  CheckCover(*parts, 1000);
  for (const auto& part : *parts) {
    CHECK(part.size() == 50);
    auto counts = LabelCounts(labels, part, 10);
    int classes = 0;
    for (int64_t c : counts) {
      classes += c > 0;
      CHECK((c == 0 || c == 25 || c == 50));
    }
    CHECK(classes <= 2);
  }
}

TEST_CASE("min_samples is honoured by redrawing") {
  const auto labels = MakeLabels(1000, 10);
  PartitionConfig config = Scheme("dirichlet");
  config.alpha = 0.5;
  config.min_samples = 0;
  auto first = Partition(config, labels, 10, 20, 11);
  REQUIRE(first.ok());
  size_t smallest = 1000;
  for (const auto& part : *first) smallest = std::min(smallest, part.size());
  REQUIRE(smallest < 25);  // so the first draw must be rejected below
  config.min_samples = 25;
  auto parts = Partition(config, labels, 10, 20, 11);
  REQUIRE(parts.ok());
  CheckCover(*parts, 1000);
  for (const auto& part : *parts) CHECK(part.size() >= 25);
  auto again = ClientIndices(config, labels, 10, 20, 3, 11);
  REQUIRE(again.ok());
  CHECK(*again == (*parts)[3]);
  // Reachable in principle, never in 1000 draws: an error, not a hang.
  config.alpha = 0.01;
  config.min_samples = 50;
  auto hard = Partition(config, labels, 10, 20, 11);
  REQUIRE_FALSE(hard.ok());
  CHECK(std::string(hard.status().message()).find("min_samples") !=
        std::string::npos);
}

TEST_CASE("bad arguments name the parameter") {
  const auto labels = MakeLabels(100, 10);
  PartitionConfig config = Scheme("dirichlet");
  config.alpha = 0;
  CheckInvalid(Partition(config, labels, 10, 5, 1).status(), "partition.alpha");
  config.alpha = -1;
  CheckInvalid(ClientIndices(config, labels, 10, 5, 0, 1).status(),
               "partition.alpha");
  config.alpha = 0.5;
  CheckInvalid(ClientIndices(config, labels, 10, 5, 5, 1).status(),
               "client_id");
  CheckInvalid(ClientIndices(config, labels, 10, 5, -1, 1).status(),
               "client_id");
  CheckInvalid(Partition(config, labels, 10, 101, 1).status(), "num_clients");
  CheckInvalid(Partition(config, labels, 10, 0, 1).status(), "num_clients");
  CheckInvalid(Partition(config, labels, 5, 5, 1).status(), "labels");
  config.min_samples = 30;
  CheckInvalid(Partition(config, labels, 10, 5, 1).status(),
               "partition.min_samples");
  PartitionConfig shards = Scheme("shards");
  shards.shards = 10;
  shards.shards_per_client = 4;
  CheckInvalid(Partition(shards, labels, 10, 5, 1).status(),
               "partition.shards");
  shards.shards_per_client = 0;
  CheckInvalid(Partition(shards, labels, 10, 5, 1).status(),
               "partition.shards_per_client");
  shards.shards = 1000;
  shards.shards_per_client = 2;
  CheckInvalid(Partition(shards, labels, 10, 5, 1).status(),
               "partition.shards");
  CheckInvalid(Partition(Scheme("own"), labels, 10, 5, 1).status(), "own");
  CheckInvalid(Partition(Scheme("zipf"), labels, 10, 5, 1).status(),
               "partition.scheme");
}

}  // namespace shefl

namespace shefl {

TEST_CASE("paper-scale Dirichlet(0.6) split of 60,000 samples, 100 clients") {
  std::vector<int64_t> labels(60000);
  for (int i = 0; i < 60000; ++i) labels[i] = (i * 7919) % 10;
  PartitionConfig config;  // dirichlet, alpha 0.6, min_samples 1
  auto parts = Partition(config, labels, 10, 100, 1);
  REQUIRE(parts.ok());
  CheckCover(*parts, 60000);
  for (int64_t j : {0, 37, 99}) {
    auto one = ClientIndices(config, labels, 10, 100, j, 1);
    REQUIRE(one.ok());
    CHECK(*one == (*parts)[j]);
  }
  // Non-iid but not degenerate: most clients see several classes.
  const double share = MeanMaxShare(*parts, labels, 10);
  INFO("mean max-class share " << share);
  CHECK(share > 0.25);
  CHECK(share < 0.8);
}

}  // namespace shefl

namespace shefl {
namespace {

// Sorted position of every index under the recipe's order: by label, ties
// by index.
std::vector<int64_t> SortedPositions(const std::vector<int64_t>& labels) {
  std::vector<int64_t> order(labels.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return labels[a] < labels[b];
  });
  std::vector<int64_t> pos(labels.size());
  for (size_t p = 0; p < order.size(); ++p) pos[order[p]] = static_cast<int64_t>(p);
  return pos;
}

// Each client holds exactly s whole shards: the sorted positions
// [floor(t*n/S), floor((t+1)*n/S)) for s distinct t.
void CheckWholeShards(const std::vector<std::vector<int64_t>>& parts,
                      const std::vector<int64_t>& labels, int64_t shards,
                      int64_t s) {
  const int64_t n = static_cast<int64_t>(labels.size());
  const auto pos = SortedPositions(labels);
  for (const auto& part : parts) {
    std::vector<int64_t> count(shards, 0);
    for (int64_t i : part) {
      // The shard t with floor(t*n/S) <= pos < floor((t+1)*n/S).
      int64_t t = pos[i] * shards / n;
      while (t + 1 < shards && (t + 1) * n / shards <= pos[i]) ++t;
      while (t * n / shards > pos[i]) --t;
      count[t]++;
    }
    int64_t held = 0;
    for (int64_t t = 0; t < shards; ++t) {
      if (count[t] == 0) continue;
      ++held;
      CHECK(count[t] == (t + 1) * n / shards - t * n / shards);
    }
    CHECK(held == s);
  }
}

}  // namespace

TEST_CASE("shards follow 000's recipe: 400 label-sorted shards 4 per client") {
  // 10 classes x 600 in a scrambled order; shards of 15 hold one label.
  std::vector<int64_t> labels(6000);
  for (int i = 0; i < 6000; ++i) labels[i] = (i * 7919) % 10;
  PartitionConfig config = Scheme("shards");
  config.shards = 400;
  config.shards_per_client = 4;
  auto parts = Partition(config, labels, 10, 100, 5);
  REQUIRE(parts.ok());
  CheckCover(*parts, 6000);
  CheckWholeShards(*parts, labels, 400, 4);
  int clients_with_several_labels = 0;
  for (const auto& part : *parts) {
    CHECK(part.size() == 60);
    int classes = 0;
    for (int64_t c : LabelCounts(labels, part, 10)) {
      classes += c > 0;
      CHECK(c % 15 == 0);
    }
    CHECK(classes <= 4);
    clients_with_several_labels += classes > 1;
  }
  CHECK(clients_with_several_labels > 50);  // shards are dealt at random
  auto again = Partition(config, labels, 10, 100, 5);
  REQUIRE(again.ok());
  CHECK(*again == *parts);
  auto one = ClientIndices(config, labels, 10, 100, 42, 5);
  REQUIRE(one.ok());
  CHECK(*one == (*parts)[42]);
  auto other = Partition(config, labels, 10, 100, 6);
  REQUIRE(other.ok());
  CHECK(*other != *parts);
}

TEST_CASE("shards with unequal classes stay whole and contiguous") {
  // SVHN-like skew, n not a multiple of S: shard sizes differ by one and a
  // shard may straddle two labels, so a client sees at most 2s labels.
  std::vector<int64_t> labels;
  for (int k = 0; k < 10; ++k)
    for (int i = 0; i < 300 + 97 * k; ++i) labels.push_back(k);
  std::vector<int64_t> scrambled(labels.size());
  for (size_t i = 0; i < labels.size(); ++i)
    scrambled[(i * 7919) % labels.size()] = labels[i];
  PartitionConfig config = Scheme("shards");
  config.shards = 400;
  config.shards_per_client = 4;
  auto parts = Partition(config, scrambled, 10, 100, 3);
  REQUIRE(parts.ok());
  const int64_t n = static_cast<int64_t>(scrambled.size());
  CheckCover(*parts, n);
  CheckWholeShards(*parts, scrambled, 400, 4);
  for (const auto& part : *parts) {
    CHECK(static_cast<int64_t>(part.size()) >= 4 * (n / 400));
    CHECK(static_cast<int64_t>(part.size()) <= 4 * (n / 400 + 1));
    int classes = 0;
    for (int64_t c : LabelCounts(scrambled, part, 10)) classes += c > 0;
    CHECK(classes <= 8);
  }
}

TEST_CASE("shards defaults: s is 4 or 20 for cifar100 and S is s times N") {
  auto fm = ParseConfig("partition:\n  scheme: shards\n", "a.yaml");
  REQUIRE(fm.ok());
  CHECK(fm->partition.shards_per_client == 4);
  CHECK(fm->partition.shards == 400);
  auto c100 = ParseConfig(
      "data:\n  dataset: cifar100\npartition:\n  scheme: shards\n", "b.yaml");
  REQUIRE(c100.ok());
  CHECK(c100->partition.shards_per_client == 20);
  CHECK(c100->partition.shards == 2000);
  auto small = ParseConfig(
      "clients:\n  num_clients: 10\n  num_hpc: 5\npartition:\n  scheme: "
      "shards\n  shards_per_client: 2\n",
      "c.yaml");
  REQUIRE(small.ok());
  CHECK(small->partition.shards_per_client == 2);
  CHECK(small->partition.shards == 20);
  auto fixed = ParseConfig(
      "data:\n  dataset: cifar100\npartition:\n  scheme: shards\n  shards: "
      "2500\n",
      "d.yaml");
  REQUIRE(fixed.ok());
  CHECK(fixed->partition.shards == 2500);
  CHECK(fixed->partition.shards_per_client == 20);
}

}  // namespace shefl
