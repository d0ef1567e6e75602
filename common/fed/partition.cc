#include "common/fed/partition.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"

namespace shefl {
namespace {

// Stream tags, so that the schemes never share a random stream.
enum : uint64_t {
  kTagIid = 1,
  kTagDirichletShuffle = 2,
  kTagDirichletProportions = 3,
  kTagShards = 4,
};

// A split before it is cut into lists: every client owns some ranges
// [first, second) of positions in `order`. Holds O(n + K*N + S) numbers,
// never a list of indices per client.
struct Plan {
  std::vector<int64_t> order;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranges;  // [client]
};

// log of a Gamma(shape, 1) variate, Marsaglia & Tsang (2000). For shape < 1
// uses Gamma(a) = Gamma(a + 1) * U^(1/a), kept in log space because U^(1/a)
// underflows to 0 for small a.
double LogGamma(std::mt19937_64& rng, double shape) {
  if (shape < 1.0) {
    const double u = 1.0 - Uniform01(rng);
    return LogGamma(rng, shape + 1.0) + std::log(u) / shape;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    const double x = StandardNormal(rng);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = 1.0 - Uniform01(rng);
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2 ||
        std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) {
      return std::log(d) + std::log(v);
    }
  }
}

// p ~ Dir(alpha, ..., alpha) over `n` entries: normalised Gamma variates,
// normalised in log space (subtract the max) so the sum is never 0.
std::vector<double> SampleDirichlet(std::mt19937_64& rng, double alpha,
                                    int64_t n) {
  std::vector<double> p(n);
  for (auto& v : p) v = LogGamma(rng, alpha);
  const double top = *std::max_element(p.begin(), p.end());
  double sum = 0.0;
  for (auto& v : p) sum += (v = std::exp(v - top));
  for (auto& v : p) v /= sum;
  return p;
}

absl::Status Invalid(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("partition: ", what));
}

absl::Status ValidateCommon(const std::vector<int64_t>& labels,
                            int64_t num_classes, int64_t num_clients) {
  const int64_t n = static_cast<int64_t>(labels.size());
  if (num_classes < 1) {
    return Invalid(absl::StrCat("num_classes must be >= 1, got ", num_classes));
  }
  if (num_clients < 1) {
    return Invalid(absl::StrCat("num_clients must be >= 1, got ", num_clients));
  }
  if (num_clients > n) {
    return Invalid(absl::StrCat("num_clients (", num_clients,
                                ") exceeds the number of samples (", n, ")"));
  }
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] < 0 || labels[i] >= num_classes) {
      return Invalid(absl::StrCat("labels: label ", labels[i], " at index ", i,
                                  " is outside [0, num_classes=", num_classes,
                                  ")"));
    }
  }
  return absl::OkStatus();
}

// Indices grouped by label: buckets[k] holds the indices of class k,
// ascending.
std::vector<std::vector<int64_t>> ByClass(const std::vector<int64_t>& labels,
                                          int64_t num_classes) {
  std::vector<std::vector<int64_t>> buckets(num_classes);
  for (int64_t i = 0; i < static_cast<int64_t>(labels.size()); ++i) {
    buckets[labels[i]].push_back(i);
  }
  return buckets;
}

Plan IidPlan(int64_t n, int64_t num_clients, uint64_t seed) {
  Plan plan;
  plan.order.resize(n);
  for (int64_t i = 0; i < n; ++i) plan.order[i] = i;
  auto rng = MakeRng(seed, SeedPurpose::kPartition,
                     {kTagIid, static_cast<uint64_t>(n),
                      static_cast<uint64_t>(num_clients)});
  Shuffle(plan.order, rng);
  plan.ranges.resize(num_clients);
  for (int64_t j = 0; j < num_clients; ++j) {
    plan.ranges[j].emplace_back(j * n / num_clients,
                                (j + 1) * n / num_clients);
  }
  return plan;
}

// Cumulative-rounding bounds of one class: b[0] = 0, b[N] = class_size.
std::vector<int64_t> CumulativeBounds(const std::vector<double>& p,
                                      int64_t class_size) {
  const int64_t num_clients = static_cast<int64_t>(p.size());
  std::vector<int64_t> b(num_clients + 1, 0);
  double c = 0.0;
  for (int64_t j = 1; j < num_clients; ++j) {
    c += p[j - 1];
    int64_t v = std::llround(c * static_cast<double>(class_size));
    b[j] = std::clamp<int64_t>(v, b[j - 1], class_size);
  }
  b[num_clients] = class_size;
  return b;
}

// bounds[k] for every class, redrawn until every client has min_samples.
absl::StatusOr<std::vector<std::vector<int64_t>>> DirichletBounds(
    const PartitionConfig& config, const std::vector<int64_t>& class_sizes,
    int64_t n, int64_t num_clients, uint64_t seed) {
  const int64_t num_classes = static_cast<int64_t>(class_sizes.size());
  for (int attempt = 0; attempt < kMaxDirichletAttempts; ++attempt) {
    std::vector<std::vector<int64_t>> bounds(num_classes);
    std::vector<int64_t> per_client(num_clients, 0);
    for (int64_t k = 0; k < num_classes; ++k) {
      auto rng = MakeRng(
          seed, SeedPurpose::kPartition,
          {kTagDirichletProportions, static_cast<uint64_t>(attempt),
           static_cast<uint64_t>(k), static_cast<uint64_t>(n),
           static_cast<uint64_t>(num_clients)});
      bounds[k] = CumulativeBounds(
          SampleDirichlet(rng, config.alpha, num_clients), class_sizes[k]);
      for (int64_t j = 0; j < num_clients; ++j) {
        per_client[j] += bounds[k][j + 1] - bounds[k][j];
      }
    }
    if (*std::min_element(per_client.begin(), per_client.end()) >=
        config.min_samples) {
      return bounds;
    }
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "partition: no Dirichlet draw in ", kMaxDirichletAttempts,
      " attempts gave every client partition.min_samples=", config.min_samples,
      " samples (partition.alpha=", config.alpha, ", num_clients=",
      num_clients, ", samples=", n, "); lower min_samples or raise alpha"));
}

absl::StatusOr<Plan> DirichletPlan(const PartitionConfig& config,
                                   const std::vector<int64_t>& labels,
                                   int64_t num_classes, int64_t num_clients,
                                   uint64_t seed) {
  if (!(config.alpha > 0.0) || !std::isfinite(config.alpha)) {
    return Invalid(absl::StrCat("partition.alpha must be > 0 and finite, got ",
                                config.alpha));
  }
  const int64_t n = static_cast<int64_t>(labels.size());
  if (config.min_samples < 0 || config.min_samples * num_clients > n) {
    return Invalid(absl::StrCat(
        "partition.min_samples=", config.min_samples, " cannot hold for ",
        num_clients, " clients and ", n, " samples"));
  }
  auto buckets = ByClass(labels, num_classes);
  std::vector<int64_t> class_sizes(num_classes);
  for (int64_t k = 0; k < num_classes; ++k) {
    class_sizes[k] = static_cast<int64_t>(buckets[k].size());
  }
  SHEFL_ASSIGN_OR_RETURN(
      auto bounds, DirichletBounds(config, class_sizes, n, num_clients, seed));
  Plan plan;
  plan.ranges.resize(num_clients);
  for (int64_t k = 0; k < num_classes; ++k) {
    auto rng = MakeRng(seed, SeedPurpose::kPartition,
                       {kTagDirichletShuffle, static_cast<uint64_t>(k),
                        static_cast<uint64_t>(n),
                        static_cast<uint64_t>(num_clients)});
    Shuffle(buckets[k], rng);
    const int64_t offset = static_cast<int64_t>(plan.order.size());
    plan.order.insert(plan.order.end(), buckets[k].begin(), buckets[k].end());
    for (int64_t j = 0; j < num_clients; ++j) {
      const auto& b = bounds[k];
      if (b[j + 1] > b[j]) {
        plan.ranges[j].emplace_back(offset + b[j], offset + b[j + 1]);
      }
    }
  }
  return plan;
}

// 000's pathological split (after McMahan et al. 2017): sort by label, 400
// shards, 4 non-overlapping shards a client (20 for CIFAR-100). The sort is
// stable (ties by index) so every daemon cuts the same shards; the seeded
// permutation dealt s at a time is s draws without replacement per client.
// The config's defaults give S = N * s (config.cc), 400 for 000's 100
// clients, so no leftover shards are dealt.
absl::StatusOr<Plan> ShardsPlan(const PartitionConfig& config,
                                const std::vector<int64_t>& labels,
                                int64_t num_classes, int64_t num_clients,
                                uint64_t seed) {
  const int64_t n = static_cast<int64_t>(labels.size());
  const int64_t s = config.shards_per_client;
  const int64_t shards = config.shards;
  if (s < 1) {
    return Invalid(
        absl::StrCat("partition.shards_per_client must be >= 1, got ", s));
  }
  if (shards < 1 || shards > n) {
    return Invalid(absl::StrCat("partition.shards must be in [1, samples=", n,
                                "], got ", shards));
  }
  if (shards < num_clients * s) {
    return Invalid(absl::StrCat(
        "partition.shards (", shards, ") is not enough for num_clients (",
        num_clients, ") * partition.shards_per_client (", s,
        ") = ", num_clients * s));
  }
  Plan plan;
  plan.order.reserve(n);
  for (auto& bucket : ByClass(labels, num_classes)) {  // stable by label
    plan.order.insert(plan.order.end(), bucket.begin(), bucket.end());
  }
  std::vector<int64_t> perm(shards);
  for (int64_t t = 0; t < shards; ++t) perm[t] = t;
  auto rng = MakeRng(seed, SeedPurpose::kPartition,
                     {kTagShards, static_cast<uint64_t>(shards),
                      static_cast<uint64_t>(n),
                      static_cast<uint64_t>(num_clients)});
  Shuffle(perm, rng);
  plan.ranges.resize(num_clients);
  for (int64_t e = 0; e < shards; ++e) {
    const int64_t client = e < num_clients * s ? e / s
                                               : (e - num_clients * s) %
                                                     num_clients;
    const int64_t t = perm[e];
    plan.ranges[client].emplace_back(t * n / shards, (t + 1) * n / shards);
  }
  return plan;
}

absl::StatusOr<Plan> MakePlan(const PartitionConfig& config,
                              const std::vector<int64_t>& labels,
                              int64_t num_classes, int64_t num_clients,
                              uint64_t seed) {
  if (config.scheme == "own") {
    return Invalid(
        "partition.scheme 'own' is not computed: each daemon reads its own "
        "folder");
  }
  if (config.scheme != "iid" && config.scheme != "dirichlet" &&
      config.scheme != "shards") {
    return Invalid(absl::StrCat("unknown partition.scheme '", config.scheme,
                                "' (iid | dirichlet | shards | own)"));
  }
  SHEFL_RETURN_IF_ERROR(ValidateCommon(labels, num_classes, num_clients));
  if (config.scheme == "iid") {
    return IidPlan(static_cast<int64_t>(labels.size()), num_clients, seed);
  }
  if (config.scheme == "dirichlet") {
    return DirichletPlan(config, labels, num_classes, num_clients, seed);
  }
  return ShardsPlan(config, labels, num_classes, num_clients, seed);
}

std::vector<int64_t> Extract(const Plan& plan, int64_t client) {
  std::vector<int64_t> out;
  for (const auto& [first, last] : plan.ranges[client]) {
    out.insert(out.end(), plan.order.begin() + first,
               plan.order.begin() + last);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ClientIndices(
    const PartitionConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t num_clients, int64_t client_id,
    uint64_t seed) {
  if (num_clients >= 1 && (client_id < 0 || client_id >= num_clients)) {
    return Invalid(absl::StrCat("client_id ", client_id,
                                " is outside [0, num_clients=", num_clients,
                                ")"));
  }
  SHEFL_ASSIGN_OR_RETURN(
      auto plan, MakePlan(config, labels, num_classes, num_clients, seed));
  return Extract(plan, client_id);
}

absl::StatusOr<std::vector<std::vector<int64_t>>> ClientsIndices(
    const PartitionConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t num_clients,
    const std::vector<int64_t>& client_ids, uint64_t seed) {
  for (int64_t id : client_ids)
    if (num_clients >= 1 && (id < 0 || id >= num_clients))
      return Invalid(absl::StrCat("client_id ", id,
                                  " is outside [0, num_clients=", num_clients,
                                  ")"));
  SHEFL_ASSIGN_OR_RETURN(
      auto plan, MakePlan(config, labels, num_classes, num_clients, seed));
  std::vector<std::vector<int64_t>> out;
  out.reserve(client_ids.size());
  for (int64_t id : client_ids) out.push_back(Extract(plan, id));
  return out;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> Partition(
    const PartitionConfig& config, const std::vector<int64_t>& labels,
    int64_t num_classes, int64_t num_clients, uint64_t seed) {
  SHEFL_ASSIGN_OR_RETURN(
      auto plan, MakePlan(config, labels, num_classes, num_clients, seed));
  std::vector<std::vector<int64_t>> all(num_clients);
  for (int64_t j = 0; j < num_clients; ++j) all[j] = Extract(plan, j);
  return all;
}

std::vector<int64_t> LabelCounts(const std::vector<int64_t>& labels,
                                 const std::vector<int64_t>& indices,
                                 int64_t num_classes) {
  std::vector<int64_t> counts(num_classes, 0);
  for (int64_t i : indices) counts[labels[i]]++;
  return counts;
}

}  // namespace shefl
