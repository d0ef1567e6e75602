#include "common/fed/schedule.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"
#include "common/fed/capacity.h"
#include "common/fed/methods/registry.h"
#include "common/sparse/codec.h"

namespace shefl {

const char* TierName(Tier t) { return t == Tier::kHpc ? "hpc" : "lpc"; }

Tier ClientTier(const ClientsConfig& clients, int64_t id) {
  return id < clients.num_hpc ? Tier::kHpc : Tier::kLpc;
}

namespace {

// Cuts `ids` (already shuffled) into `n` clusters whose sizes differ by at
// most one, each sorted ascending.
void CutInto(std::vector<int64_t> ids, int64_t n, Tier tier, Clusters* out) {
  const int64_t size = static_cast<int64_t>(ids.size());
  for (int64_t c = 0; c < n; ++c) {
    auto begin = ids.begin() + c * size / n;
    auto end = ids.begin() + (c + 1) * size / n;
    std::vector<int64_t> members(begin, end);
    std::sort(members.begin(), members.end());
    out->members.push_back(std::move(members));
    out->tier.push_back(tier);
  }
}

std::vector<int64_t> Range(int64_t lo, int64_t hi) {
  std::vector<int64_t> v(hi - lo);
  std::iota(v.begin(), v.end(), lo);
  return v;
}

}  // namespace

Clusters MakeClusters(const ClientsConfig& cl, bool tiered, uint64_t seed) {
  Clusters out;
  auto rng = MakeRng(seed, SeedPurpose::kClusters);
  if (tiered) {
    std::vector<int64_t> hpc = Range(0, cl.num_hpc);
    std::vector<int64_t> lpc = Range(cl.num_hpc, cl.num_clients);
    Shuffle(hpc, rng);
    Shuffle(lpc, rng);
    CutInto(std::move(hpc), cl.per_round_hpc, Tier::kHpc, &out);
    CutInto(std::move(lpc), cl.per_round_lpc, Tier::kLpc, &out);
  } else {
    std::vector<int64_t> all = Range(0, cl.num_clients);
    Shuffle(all, rng);
    CutInto(std::move(all), cl.per_round_hpc + cl.per_round_lpc, Tier::kLpc,
            &out);
  }
  return out;
}

namespace {

// k distinct elements of `pool` drawn uniformly (partial Fisher-Yates).
std::vector<int64_t> DrawDistinct(std::vector<int64_t> pool, int64_t k,
                                  std::mt19937_64& rng) {
  const int64_t n = static_cast<int64_t>(pool.size());
  k = std::min(k, n);
  for (int64_t i = 0; i < k; ++i) {
    int64_t j = i + static_cast<int64_t>(UniformBelow(rng, n - i));
    std::swap(pool[i], pool[j]);
  }
  pool.resize(k);
  return pool;
}

// DrawDistinct over the virtual pool at(0), ..., at(n - 1) without
// building it: the swaps are kept in a map, so drawing k costs O(k)
// whatever n is, and the draws equal DrawDistinct's on the built pool.
std::vector<int64_t> DrawDistinctSparse(
    int64_t n, int64_t k, const std::function<int64_t(int64_t)>& at,
    std::mt19937_64& rng) {
  k = std::min(k, n);
  std::unordered_map<int64_t, int64_t> moved;  // position -> value there
  auto get = [&](int64_t i) {
    auto it = moved.find(i);
    return it == moved.end() ? at(i) : it->second;
  };
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(k, 0)));
  for (int64_t i = 0; i < k; ++i) {
    const int64_t j = i + static_cast<int64_t>(UniformBelow(rng, n - i));
    const int64_t vi = get(i), vj = get(j);
    moved[j] = vi;  // position i is final: only j keeps a value to draw
    out.push_back(vj);
  }
  return out;
}

// The i-th id of [0, n) not in `taken` (ascending, distinct): O(|taken|).
int64_t NthFree(const std::vector<int64_t>& taken, int64_t i) {
  int64_t id = i;
  for (int64_t t : taken) {
    if (t > id) break;
    ++id;
  }
  return id;
}

}  // namespace

std::vector<CohortMember> SampleCohort(const ClientsConfig& cl,
                                       const Clusters& clusters, bool tiered,
                                       uint64_t seed, int64_t round,
                                       const Availability& available) {
  auto rng = MakeRng(seed, SeedPurpose::kCohort, {static_cast<uint64_t>(round)});
  auto usable = [&](std::vector<int64_t> ids) {
    if (available)
      ids.erase(std::remove_if(ids.begin(), ids.end(),
                               [&](int64_t id) { return !available(id); }),
                ids.end());
    return ids;
  };
  // Ids lo..hi-1: with everyone available, drawn in O(n) (n drawn)
  // rather than O(hi - lo); the same draws either way.
  auto draw_range = [&](int64_t lo, int64_t hi, int64_t n) {
    if (available)
      return DrawDistinct(usable(Range(lo, hi)), n, rng);
    return DrawDistinctSparse(hi - lo, n, [lo](int64_t i) { return lo + i; },
                              rng);
  };
  std::vector<CohortMember> cohort;
  if (cl.sampling == "clustered") {
    for (size_t c = 0; c < clusters.members.size(); ++c) {
      const std::vector<int64_t>& all = clusters.members[c];
      std::vector<int64_t> some;  // only when a filter applies
      if (available) some = usable(all);
      const std::vector<int64_t>& m = available ? some : all;
      if (m.empty()) continue;
      int64_t id = m[UniformBelow(rng, m.size())];
      cohort.push_back({id, static_cast<int64_t>(c), clusters.tier[c]});
    }
  } else if (tiered) {
    for (int64_t id : draw_range(0, cl.num_hpc, cl.per_round_hpc))
      cohort.push_back({id, -1, Tier::kHpc});
    for (int64_t id : draw_range(cl.num_hpc, cl.num_clients, cl.per_round_lpc))
      cohort.push_back({id, -1, Tier::kLpc});
  } else {
    for (int64_t id : draw_range(0, cl.num_clients,
                                 cl.per_round_hpc + cl.per_round_lpc))
      cohort.push_back({id, -1, Tier::kLpc});
  }
  const int64_t c = static_cast<int64_t>(cohort.size());
  const int64_t extra =
      static_cast<int64_t>(std::ceil(c * (1.0 + cl.over_selection) - 1e-9)) - c;
  if (extra > 0) {
    std::vector<int64_t> taken;
    for (const auto& m : cohort) taken.push_back(m.client_id);
    std::sort(taken.begin(), taken.end());
    std::vector<int64_t> drawn;
    if (available) {
      std::vector<int64_t> rest;
      for (int64_t id = 0; id < cl.num_clients; ++id)
        if (!std::binary_search(taken.begin(), taken.end(), id))
          rest.push_back(id);
      drawn = DrawDistinct(usable(std::move(rest)), extra, rng);
    } else {
      drawn = DrawDistinctSparse(
          cl.num_clients - c, extra,
          [&taken](int64_t i) { return NthFree(taken, i); }, rng);
    }
    for (int64_t id : drawn) cohort.push_back({id, -1, Tier::kLpc, true});
  }
  return cohort;
}

absl::StatusOr<PermutationForm> ResolvePermutationForm(
    const std::string& assignment, const std::string& method, int64_t rows,
    int64_t M) {
  if (assignment == "latin") return PermutationForm::kLatin;
  if (assignment == "shuffle") return PermutationForm::kShuffle;
  if (assignment == "auto") {
    if (!TraitsOf(method).latin_when_divisible) return PermutationForm::kShuffle;
    return rows % M == 0 ? PermutationForm::kLatin : PermutationForm::kShuffle;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "schedule.assignment: '", assignment, "' is not auto, latin or shuffle"));
}

PermutationMatrix MakePermutation(PermutationForm form, int64_t rows,
                                  int64_t M, uint64_t seed, int64_t period) {
  auto rng = MakeRng(seed, SeedPurpose::kPermutation,
                     {static_cast<uint64_t>(period)});
  PermutationMatrix p;
  if (form == PermutationForm::kShuffle) {
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> row = Range(0, M);
      Shuffle(row, rng);
      p.rows.push_back(std::move(row));
    }
    return p;
  }
  std::vector<int64_t> base = Range(0, M);
  Shuffle(base, rng);
  const int64_t offset = static_cast<int64_t>(UniformBelow(rng, M));
  std::vector<int64_t> shifts(rows);
  for (int64_t r = 0; r < rows; ++r) shifts[r] = (offset + r) % M;
  Shuffle(shifts, rng);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> row(M);
    for (int64_t j = 0; j < M; ++j) row[j] = base[(j + shifts[r]) % M];
    p.rows.push_back(std::move(row));
  }
  return p;
}

namespace {

int64_t TolerantCeil(long double x, int64_t d) {
  if (d <= 0 || !(x > 0)) return 0;  // also NaN
  if (x >= static_cast<long double>(d)) return d;
  const long double nearest = std::nearbyint(x);
  const long double tol = 1e-9L * std::max<long double>(1, x);
  const long double k = std::fabs(x - nearest) <= tol ? nearest : std::ceil(x);
  return std::min<int64_t>(static_cast<int64_t>(k), d);
}

}  // namespace

int64_t KForDensity(int64_t d, double rho) {
  return TolerantCeil(static_cast<long double>(rho) * d, d);
}

int64_t KForHpc(int64_t d, double rho, double r, int64_t M) {
  M = std::max<int64_t>(M, 1);
  const long double ratio = r > 0 ? static_cast<long double>(r) / M : 1.0L;
  return TolerantCeil(ratio * static_cast<long double>(rho) * d, d);
}

absl::StatusOr<BudgetKs> KsForBudget(const ExperimentConfig& config,
                                     int64_t d) {
  const CompressionConfig& k = config.compression;
  SHEFL_ASSIGN_OR_RETURN(auto type, ParseValueType(k.value_type));
  const int64_t M = std::max<int64_t>(config.model.num_models, 1);
  const uint64_t lpc_bytes = static_cast<uint64_t>(k.budget_bytes);
  // A shefl HPC has r LPC budgets for its M models; a baseline client of
  // either tier trains one model on one budget.
  const uint64_t hpc_bytes =
      MethodHasTiers(config.method)
          ? static_cast<uint64_t>(std::floor(
                static_cast<long double>(ResourceRatio(config)) *
                lpc_bytes / M))
          : lpc_bytes;
  auto fit = [&](uint64_t bytes,
                 const std::string& what) -> absl::StatusOr<int64_t> {
    auto got = LargestKForBudget(static_cast<uint64_t>(d), bytes, type);
    if (got.ok() && *got >= 1) return static_cast<int64_t>(*got);
    return absl::InvalidArgumentError(absl::StrCat(
        "key 'compression.budget_bytes': ", what, " cannot carry one ",
        k.value_type, " value of a model of ", d, " parameters (k = 1 needs ",
        PredictEncodedSizeUpperBound(d, 1, type), " bytes)"));
  };
  BudgetKs out;
  SHEFL_ASSIGN_OR_RETURN(out.k_lpc,
                         fit(lpc_bytes, absl::StrCat(lpc_bytes, " bytes")));
  SHEFL_ASSIGN_OR_RETURN(
      out.k_hpc,
      fit(hpc_bytes,
          absl::StrCat("an HPC's share of r * ", lpc_bytes, " bytes over ", M,
                       " models, ", hpc_bytes, " bytes a model,")));
  return out;
}

absl::StatusOr<Scheduler> Scheduler::Create(const ExperimentConfig& config,
                                            int64_t model_dim) {
  if (model_dim <= 0)
    return absl::InvalidArgumentError("Scheduler: model dimension must be > 0");
  Scheduler s;
  s.config_ = config;
  s.d_ = model_dim;
  s.tiered_ = MethodHasTiers(config.method);
  s.clusters_ = MakeClusters(config.clients, s.tiered_, config.seed);
  const int64_t M = config.model.num_models;
  const int64_t lpc_rows =
      s.tiered_ ? config.clients.per_round_lpc
                : config.clients.per_round_hpc + config.clients.per_round_lpc;
  SHEFL_ASSIGN_OR_RETURN(
      s.form_, ResolvePermutationForm(config.schedule.assignment, config.method,
                                      std::max<int64_t>(lpc_rows, 1), M));
  SHEFL_ASSIGN_OR_RETURN(s.hpc_levels_,
                         ParseCapacityLevels(config.clients.hpc_capacity, M));
  if (config.compression.budget_bytes > 0) {
    SHEFL_ASSIGN_OR_RETURN(auto ks, KsForBudget(config, model_dim));
    s.k_lpc_ = ks.k_lpc;
    s.k_hpc_ = ks.k_hpc;
    return s;
  }
  const double rho = config.compression.density;
  s.k_lpc_ = std::max<int64_t>(1, KForDensity(model_dim, rho));
  s.k_hpc_ = s.tiered_ ? std::max<int64_t>(1, KForHpc(model_dim, rho,
                                                      ResourceRatio(config), M))
                       : s.k_lpc_;
  return s;
}

PermutationMatrix Scheduler::PermutationFor(int64_t round) const {
  const int64_t M = config_.model.num_models;
  int64_t rows = 0;
  for (Tier t : clusters_.tier) rows += t == Tier::kLpc ? 1 : 0;
  return MakePermutation(form_, rows, M, config_.seed, round / M);
}

int64_t Scheduler::ConfiguredCapacity(int64_t client_id) const {
  return ConfiguredHpcCapacity(hpc_levels_, client_id,
                               config_.model.num_models);
}

RoundPlan Scheduler::Plan(int64_t round, const Availability& available,
                          const CapacityOf& capacity) const {
  const int64_t M = config_.model.num_models;
  RoundPlan plan;
  plan.round = round;
  const PermutationMatrix p = PermutationFor(round);
  // Row of P for each LPC cluster: LPC clusters in cluster order.
  std::vector<int64_t> row_of(clusters_.members.size(), -1);
  int64_t next_row = 0;
  for (size_t c = 0; c < clusters_.tier.size(); ++c)
    if (clusters_.tier[c] == Tier::kLpc) row_of[c] = next_row++;

  int64_t extra = 0, unclustered = 0;
  for (const CohortMember& m :
       SampleCohort(config_.clients, clusters_, tiered_, config_.seed, round,
                    available)) {
    // shefl trains a client as the tier it was sampled as; a baseline's
    // clients all train one model, their tier setting only their epochs.
    const Tier tier = tiered_ ? m.tier : ClientTier(config_.clients, m.client_id);
    ClientTask task{m.client_id, tier, {}, {}};
    if (!m.extra) ++plan.needed;
    (tier == Tier::kHpc ? plan.num_hpc : plan.num_lpc)++;
    const int64_t offset = m.cluster >= 0 ? m.cluster : m.client_id;
    const double declared = capacity ? capacity(m.client_id) : 0.0;
    if (TraitsOf(config_.method).assignment == Assignment::kHasa) {
      const double c = declared > 0 ? declared : config_.hasa.budget * M;
      task.models = RotatingModels(c, round, offset, M);
      task.k.assign(task.models.size(), k_lpc_);
    } else if (m.tier == Tier::kHpc) {
      const double c = declared > 0
                           ? std::min<double>(std::floor(declared), M)
                           : static_cast<double>(ConfiguredCapacity(m.client_id));
      task.models = RotatingModels(c, round, offset, M);
      task.k.assign(task.models.size(), k_hpc_);
      plan.hpc_subsets |= static_cast<int64_t>(task.models.size()) < M;
    } else {
      int64_t model;
      if (m.cluster >= 0) {
        model = p.rows[row_of[m.cluster]][round % M];
      } else if (!m.extra && unclustered < static_cast<int64_t>(p.rows.size())) {
        model = p.rows[unclustered++][round % M];
      } else {
        model = (round + extra++) % M;  // extras walk the models in turn
      }
      task.models.push_back(model);
      task.k.push_back(k_lpc_);
    }
    plan.tasks.push_back(std::move(task));
  }
  std::sort(plan.tasks.begin(), plan.tasks.end(),
            [](const ClientTask& a, const ClientTask& b) {
              return a.client_id < b.client_id;
            });
  if (plan.needed == static_cast<int64_t>(plan.tasks.size())) plan.needed = 0;
  return plan;
}

}  // namespace shefl
