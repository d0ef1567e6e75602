// Config loading: one table binds every dotted key to its field, type and
// allowed range, so parsing, overrides, validation and the resolved-config
// dump all read the same list and cannot drift apart.
#include "common/config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <variant>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/capacity.h"

namespace shefl {
namespace {

using Target =
    std::variant<std::string*, int64_t*, uint64_t*, double*, bool*>;

struct Field {
  std::string key;
  Target target;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // strings: allowed values (empty: any)
};

constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<Field> Fields(ExperimentConfig& c) {
  auto& d = c.data;
  auto& p = c.partition;
  auto& t = c.train;
  auto& k = c.compression;
  auto& cl = c.clients;
  auto& a = c.aggregation;
  return {
      {"name", &c.name},
      {"method", &c.method, 0, 0,
       {"shefl", "fedensemble", "fedavg", "fedprox", "fens", "hasa"}},
      {"seed", &c.seed},
      {"rounds", &c.rounds, 1, 1e9},
      {"out_dir", &c.out_dir},
      {"round_deadline_s", &c.round_deadline_s, 0.001, 86400},
      {"device", &c.device},
      {"data.dataset", &d.dataset, 0, 0,
       {"fmnist", "mnist", "cifar10", "cifar100", "svhn", "agnews",
        "synthetic"}},
      {"data.root", &d.root},
      {"data.synthetic_train", &d.synthetic_train, 1, 1e9},
      {"data.synthetic_test", &d.synthetic_test, 1, 1e9},
      {"data.synthetic_features", &d.synthetic_features, 1, 1e6},
      {"data.synthetic_classes", &d.synthetic_classes, 2, 1e6},
      {"data.text_vocab", &d.text_vocab, 2, 1e9},
      {"data.text_max_len", &d.text_max_len, 1, 1e6},
      {"partition.scheme", &p.scheme, 0, 0, {"iid", "dirichlet", "shards", "own"}},
      {"partition.alpha", &p.alpha, 1e-6, kInf},
      {"partition.shards", &p.shards, 1, 1e9},
      {"partition.shards_per_client", &p.shards_per_client, 1, 1e9},
      {"partition.min_samples", &p.min_samples, 0, 1e9},
      {"model.name", &c.model.name},
      {"model.num_models", &c.model.num_models, 1, 1024},
      {"train.optimizer", &t.optimizer, 0, 0, {"sgd", "adam"}},
      {"train.lr", &t.lr, 1e-12, 1e3},
      {"train.momentum", &t.momentum, 0, 1},
      {"train.weight_decay", &t.weight_decay, 0, 1e3},
      {"train.local_epochs", &t.local_epochs, 0, 1e6},
      {"train.local_steps", &t.local_steps, 0, 1e9},
      {"train.hpc_local_epochs", &t.hpc_local_epochs, 0, 1e6},
      {"train.batch_size", &t.batch_size, 1, 1e7},
      {"train.lr_decay", &t.lr_decay, 1e-6, 1},
      {"train.lr_decay_every", &t.lr_decay_every, 1, 1e9},
      {"train.lr_schedule", &t.lr_schedule, 0, 0, {"constant", "cosine"}},
      {"train.prox_mu", &t.prox_mu, 0, 1e6},
      {"compression.density", &k.density, 1e-9, 1},
      {"compression.resource_ratio", &k.resource_ratio, 0, 1e6},
      {"compression.value_type", &k.value_type, 0, 0, {"fp32", "fp16", "bf16"}},
      {"compression.error_feedback", &k.error_feedback},
      {"compression.budget_bytes", &k.budget_bytes, 0, 1e15},
      {"clients.num_clients", &cl.num_clients, 1, 1e8},
      {"clients.num_hpc", &cl.num_hpc, 0, 1e8},
      {"clients.per_round_hpc", &cl.per_round_hpc, 0, 1e8},
      {"clients.per_round_lpc", &cl.per_round_lpc, 0, 1e8},
      {"clients.sampling", &cl.sampling, 0, 0, {"clustered", "uniform"}},
      {"clients.over_selection", &cl.over_selection, 0, 10},
      // The spelling; both set the same value.
      {"clients.over_select", &cl.over_selection, 0, 10},
      {"clients.min_connected", &cl.min_connected, 0, 1e8},
      {"clients.start_timeout_s", &cl.start_timeout_s, 0, 86400},
      {"clients.hpc_capacity", &cl.hpc_capacity},
      {"hasa.allocation", &c.hasa.allocation, 0, 0,
       {"hasa", "uniform", "size", "mixed", "inverse"}},
      {"hasa.budget", &c.hasa.budget, 1e-6, 1},
      {"hasa.r_min", &c.hasa.r_min, 1e-6, 1},
      {"hasa.r_max", &c.hasa.r_max, 1e-6, 1},
      {"hasa.gamma", &c.hasa.gamma, 0, 1},
      {"hasa.smoothing", &c.hasa.smoothing, 1e-12, 1e12},
      {"hasa.passes", &c.hasa.passes, 1, 1000},
      {"schedule.assignment", &c.schedule.assignment, 0, 0,
       {"auto", "latin", "shuffle"}},
      {"aggregation.rule", &a.rule, 0, 0,
       {"workload_aware", "uniform", "paper", "paper_per_model"}},
      {"aggregation.hpc_share", &a.hpc_share, 0, 1},
      {"aggregation.weight_by_samples", &a.weight_by_samples},
      {"aggregation.server_lr", &a.server_lr, 1e-9, 1e6},
      {"eval.every", &c.eval.every, 1, 1e9},
      {"eval.threshold", &c.eval.threshold, 0, 1},
      {"eval.max_test_samples", &c.eval.max_test_samples, 0, 1e12},
      {"eval.batch_size", &c.eval.batch_size, 1, 1e7},
      {"eval.client_holdout", &c.eval.client_holdout, 0, 0.999999},
      {"eval.gamma", &c.eval.gamma, 0, 1e12},
      {"fens.aggregator", &c.fens.aggregator, 0, 0,
       {"mean", "weighted", "linear", "nn"}},
      {"fens.proxy_fraction", &c.fens.proxy_fraction, 0, 0.9},
      {"fens.hidden_units", &c.fens.hidden_units, 1, 1e6},
      {"fens.epochs", &c.fens.epochs, 0, 1e6},
      {"fens.lr", &c.fens.lr, 1e-12, 1e3},
      {"fens.lr_decay", &c.fens.lr_decay, 1e-6, 1},
      {"fens.batch_size", &c.fens.batch_size, 1, 1e7},
  };
}

// Levenshtein distance, for "did you mean" hints on unknown keys.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}

std::string Hint(const std::string& key, const std::vector<Field>& fields) {
  std::string best;
  size_t best_d = 4;  // only close matches are worth suggesting
  for (const Field& f : fields) {
    size_t dist = EditDistance(key, f.key);
    if (dist < best_d) best_d = dist, best = f.key;
  }
  return best.empty() ? "" : absl::StrCat(" (did you mean '", best, "'?)");
}

std::string NodeText(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  std::ostringstream os;
  os << n;
  return os.str();
}

absl::Status BadValue(const std::string& where, const Field& f,
                      const std::string& what) {
  return absl::InvalidArgumentError(
      absl::StrCat(where, ": key '", f.key, "': ", what));
}

// NaN and the infinities are never a setting: `alpha: .inf` passed an
// unbounded range, then failed in the partition, and its resolved dump
// ("inf") did not load again (fuzz/config_fuzzer.cc's reload check).
absl::Status CheckRange(const std::string& where, const Field& f, double v) {
  if (!std::isfinite(v) || v < f.min || v > f.max) {
    return BadValue(where, f,
                    absl::StrFormat("value %g is out of range [%g, %g]", v,
                                    f.min, f.max));
  }
  return absl::OkStatus();
}

// Sets one field from a YAML scalar, checking type and range.
absl::Status SetField(const std::string& where, const Field& f,
                      const YAML::Node& n) {
  if (!n.IsScalar()) return BadValue(where, f, "expected a single value");
  const std::string text = n.Scalar();
  try {
    if (auto* s = std::get_if<std::string*>(&f.target)) {
      if (!f.choices.empty() &&
          std::find(f.choices.begin(), f.choices.end(), text) ==
              f.choices.end()) {
        return BadValue(where, f,
                        absl::StrCat("'", text, "' is not one of: ",
                                     absl::StrJoin(f.choices, ", ")));
      }
      **s = text;
    } else if (auto* i = std::get_if<int64_t*>(&f.target)) {
      int64_t v = n.as<int64_t>();
      if (auto st = CheckRange(where, f, static_cast<double>(v)); !st.ok())
        return st;
      **i = v;
    } else if (auto* u = std::get_if<uint64_t*>(&f.target)) {
      if (absl::StartsWith(text, "-"))
        return BadValue(where, f, "expected a non-negative integer");
      **u = n.as<uint64_t>();
    } else if (auto* dv = std::get_if<double*>(&f.target)) {
      double v = n.as<double>();
      if (auto st = CheckRange(where, f, v); !st.ok()) return st;
      **dv = v;
    } else if (auto* b = std::get_if<bool*>(&f.target)) {
      **b = n.as<bool>();
    }
  } catch (const YAML::Exception&) {
    const char* type = std::holds_alternative<bool*>(f.target)     ? "a boolean"
                       : std::holds_alternative<double*>(f.target) ? "a number"
                                                                   : "an integer";
    return BadValue(where, f,
                    absl::StrCat("expected ", type, ", got '", text, "'"));
  }
  return absl::OkStatus();
}

const Field* FindField(const std::vector<Field>& fields,
                       const std::string& key) {
  for (const Field& f : fields)
    if (f.key == key) return &f;
  return nullptr;
}

bool IsSection(const std::vector<Field>& fields, const std::string& prefix) {
  for (const Field& f : fields)
    if (absl::StartsWith(f.key, prefix + ".")) return true;
  return false;
}

// Where each key that was set came from: "file:line" or "--set", so that
// errors found later (cross-key checks) still point at the line.
using Origins = std::map<std::string, std::string>;

absl::Status Walk(const std::string& source, const YAML::Node& node,
                  const std::string& prefix, const std::vector<Field>& fields,
                  Origins* seen) {
  if (!node.IsMap()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", node.Mark().line + 1, ": ",
        prefix.empty() ? "the top level" : "key '" + prefix + "'",
        " must be a mapping of keys to values"));
  }
  for (const auto& kv : node) {
    const std::string key =
        prefix.empty() ? kv.first.Scalar() : prefix + "." + kv.first.Scalar();
    const std::string where =
        absl::StrCat(source, ":", kv.first.Mark().line + 1);
    if (const Field* f = FindField(fields, key)) {
      if (auto st = SetField(where, *f, kv.second); !st.ok()) return st;
      (*seen)[key] = where;
    } else if (IsSection(fields, key)) {
      if (kv.second.IsNull()) continue;  // an empty section keeps defaults
      if (auto st = Walk(source, kv.second, key, fields, seen); !st.ok())
        return st;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": unknown key '", key, "'", Hint(key, fields)));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyOverride(const std::string& kv,
                           const std::vector<Field>& fields, Origins* seen) {
  const size_t eq = kv.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set '", kv, "': expected key=value, e.g. --set rounds=3"));
  }
  const std::string key = kv.substr(0, eq);
  const Field* f = FindField(fields, key);
  if (f == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--set: unknown key '", key, "'", Hint(key, fields)));
  }
  YAML::Node value;
  try {
    value = YAML::Load(kv.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("--set ", key, ": cannot parse value: ", e.what()));
  }
  if (value.IsNull()) value = YAML::Node(std::string());
  if (auto st = SetField("--set", *f, value); !st.ok()) return st;
  (*seen)[key] = "--set";
  return absl::OkStatus();
}

}  // namespace

bool MethodHasTiers(const std::string& method) { return method == "shefl"; }

double DefaultDensity(const std::string& method) {
  return method == "shefl" ? 0.1 : 1.0;
}

double ResourceRatio(const ExperimentConfig& c) {
  return c.compression.resource_ratio > 0
             ? c.compression.resource_ratio
             : static_cast<double>(c.model.num_models);
}

namespace {

// Capacity levels and HASA (common/capacity.h, common/hasa.h): HASA
// aggregates by shard size (003: size-proportional client weights).
template <typename KeyErrorFn>
absl::Status ResolveCapacity(const Origins& seen, const KeyErrorFn& KeyError,
                             ExperimentConfig& c) {
  const int64_t M = c.model.num_models;
  if (!c.clients.hpc_capacity.empty()) {
    if (c.method != "shefl")
      return KeyError("clients.hpc_capacity",
                      absl::StrCat("capacity levels are SHEFL's HPCs'; method ",
                                   c.method, " has none (hasa allocates its "
                                   "own capacities: see hasa.*)"),
                      {"method"});
    auto levels = ParseCapacityLevels(c.clients.hpc_capacity, M);
    if (!levels.ok())
      return KeyError("clients.hpc_capacity",
                      std::string(levels.status().message()).substr(
                          std::string("key 'clients.hpc_capacity': ").size()),
                      {"model.num_models"});
  }
  if (c.method != "hasa") return absl::OkStatus();
  const HasaConfig& h = c.hasa;
  if (seen.count("aggregation.weight_by_samples") == 0)
    c.aggregation.weight_by_samples = true;
  if (h.r_min > h.r_max)
    return KeyError("hasa.r_min",
                    absl::StrCat(h.r_min, " is above hasa.r_max (", h.r_max, ")"),
                    {"hasa.r_max"});
  if (h.budget < h.r_min || h.budget > h.r_max)
    return KeyError("hasa.budget",
                    absl::StrCat(h.budget, " is outside [hasa.r_min, hasa.r_max]"
                                 " = [", h.r_min, ", ", h.r_max, "]"),
                    {"hasa.r_min", "hasa.r_max"});
  if (h.r_min * static_cast<double>(M) < 1 - 1e-9)
    return KeyError("hasa.r_min",
                    absl::StrCat("r_min * model.num_models = ", h.r_min * M,
                                 " < 1: every client must train at least one "
                                 "of the ", M, " models a round"),
                    {"model.num_models"});
  return absl::OkStatus();
}

// FENS's presets (002): one round in which every client trains the one
// initial model and uploads it dense; refusals name the key that breaks it.
template <typename KeyErrorFn>
absl::Status ResolveFens(const Origins& seen, const KeyErrorFn& KeyError,
                         ExperimentConfig& c) {
  auto unset = [&](const char* key) { return seen.count(key) == 0; };
  if (unset("rounds")) c.rounds = 1;
  if (c.rounds != 1)
    return KeyError("rounds",
                    absl::StrCat("method fens is one-shot: rounds must be 1; "
                                 "got ", c.rounds),
                    {"method"});
  if (unset("model.num_models")) c.model.num_models = 1;
  if (c.model.num_models != 1)
    return KeyError("model.num_models",
                    absl::StrCat("method fens: every client trains the one "
                                 "initial model (the ensemble is the N client "
                                 "models); got ",
                                 c.model.num_models),
                    {"method"});
  auto& cl = c.clients;
  if (unset("clients.per_round_hpc")) cl.per_round_hpc = 0;
  if (unset("clients.per_round_lpc"))
    cl.per_round_lpc = cl.num_clients - cl.per_round_hpc;
  if (cl.per_round_hpc + cl.per_round_lpc != cl.num_clients)
    return KeyError("clients.per_round_lpc",
                    absl::StrCat("method fens: every client takes part in its "
                                 "one round; per_round_hpc + per_round_lpc "
                                 "must be clients.num_clients (",
                                 cl.num_clients, ")"),
                    {"clients.per_round_hpc", "clients.num_clients"});
  if (cl.over_selection > 0)
    return KeyError("clients.over_selection",
                    "method fens: every client takes part; no over-selection",
                    {"method"});
  // FENS combines its members with the fitted aggregator, so there are no
  // member weights to personalise; eval.client_holdout scores the
  // aggregated ensemble on each client's held-out split.
  if (c.eval.gamma > 0)
    return KeyError("eval.gamma",
                    "method fens combines its members with fens.aggregator; "
                    "personalised member weights do not apply",
                    {"method"});
  if (c.partition.scheme == "own")
    return KeyError("partition.scheme",
                    "method fens holds back a proxy split of the training "
                    "set, which 'own' data cannot give",
                    {"method"});
  return absl::OkStatus();
}

// Method presets, then the checks that involve more than one key.
absl::Status Resolve(const std::string& source, const Origins& seen,
                     ExperimentConfig& c) {
  auto unset = [&](const char* key) { return seen.count(key) == 0; };
  // An error about `key`, placed where it was set, else where the first of
  // `related` was set (a default broke against another key), else the file.
  auto KeyError = [&](const std::string& key, const std::string& why,
                      std::initializer_list<const char*> related = {}) {
    std::string where = source;
    if (auto it = seen.find(key); it != seen.end()) {
      where = it->second;
    } else {
      for (const char* r : related)
        if (auto at = seen.find(r); at != seen.end()) {
          where = at->second;
          break;
        }
    }
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": key '", key, "': ", why));
  };
  if (c.method == "fens")
    if (auto st = ResolveFens(seen, KeyError, c); !st.ok()) return st;
  const bool single = c.method == "fedavg" || c.method == "fedprox";
  if (single) {
    if (unset("model.num_models")) c.model.num_models = 1;
    if (c.model.num_models != 1)
      return KeyError("model.num_models",
                      absl::StrCat("method ", c.method,
                                   " trains one model; got ",
                                   c.model.num_models),
                      {"method"});
  }
  if (c.method == "fedprox" && unset("train.prox_mu")) c.train.prox_mu = 0.01;
  if (auto st = ResolveCapacity(seen, KeyError, c); !st.ok()) return st;
  // The papers' baselines upload dense deltas; top-k is theirs only when
  // asked for (section 2, "Baselines in the same runtime").
  if (unset("compression.density"))
    c.compression.density = DefaultDensity(c.method);
  // A byte budget decides k by itself. The method's default density may
  // stand beside it (the resolved config writes both and must load again);
  // any other density contradicts it.
  if (c.compression.budget_bytes > 0 &&
      c.compression.density != DefaultDensity(c.method))
    return KeyError("compression.budget_bytes",
                    absl::StrCat("a byte budget decides k, but "
                                 "compression.density is also set (",
                                 c.compression.density,
                                 "); give one or the other"),
                    {"compression.density"});
  if (!MethodHasTiers(c.method)) {
    if (unset("aggregation.rule")) c.aggregation.rule = "uniform";
    if (c.aggregation.rule != "uniform")
      return KeyError("aggregation.rule",
                      absl::StrCat("method ", c.method,
                                   " has no tiers; only 'uniform' applies"),
                      {"method"});
  }
  const auto& cl = c.clients;
  if (cl.num_hpc > cl.num_clients)
    return KeyError("clients.num_hpc",
                    absl::StrCat(cl.num_hpc, " HPCs but only ",
                                 cl.num_clients, " clients"),
                    {"clients.num_clients"});
  if (cl.per_round_hpc + cl.per_round_lpc == 0)
    return KeyError("clients.per_round_lpc",
                    "the cohort is empty (per_round_hpc + per_round_lpc = 0)",
                    {"clients.per_round_hpc"});
  if (MethodHasTiers(c.method)) {
    if (cl.per_round_hpc > cl.num_hpc)
      return KeyError("clients.per_round_hpc",
                      absl::StrCat(cl.per_round_hpc, " per round but only ",
                                   cl.num_hpc, " HPCs"),
                      {"clients.num_hpc", "clients.num_clients"});
    if (cl.per_round_lpc > cl.num_clients - cl.num_hpc)
      return KeyError("clients.per_round_lpc",
                      absl::StrCat(cl.per_round_lpc, " per round but only ",
                                   cl.num_clients - cl.num_hpc, " LPCs"),
                      {"clients.num_hpc", "clients.num_clients"});
  } else if (cl.per_round_hpc + cl.per_round_lpc > cl.num_clients) {
    return KeyError("clients.per_round_lpc",
                    "cohort larger than clients.num_clients",
                    {"clients.per_round_hpc", "clients.num_clients"});
  }
  if (cl.min_connected > cl.num_clients)
    return KeyError("clients.min_connected",
                    absl::StrCat(cl.min_connected, " but only ",
                                 cl.num_clients, " clients"),
                    {"clients.num_clients"});
  if (c.train.hpc_local_epochs > 0 && cl.num_hpc == 0)
    return KeyError("train.hpc_local_epochs",
                    "clients.num_hpc is 0: no client is an HPC",
                    {"clients.num_hpc"});
  if (c.partition.scheme == "own") {
    // The coordinator rebuilds every shard from the seed to simulate the
    // clients' own evaluation (server/client_evaluator.h): not with 'own'.
    for (const char* key : {"eval.client_holdout", "eval.gamma"}) {
      const double v = std::string(key) == "eval.gamma" ? c.eval.gamma
                                                        : c.eval.client_holdout;
      if (v > 0)
        return KeyError(key,
                        "the coordinator computes it from each client's "
                        "shard, which it cannot know under partition.scheme "
                        "'own'",
                        {"partition.scheme"});
    }
  }
  if (c.train.local_steps == 0 && c.train.local_epochs == 0)
    return KeyError("train.local_epochs",
                    "0 epochs and 0 steps: nothing would be trained",
                    {"train.local_steps"});
  // 000's pathological recipe: s = 4 shards a client, 20 for CIFAR-100,
  // and S = N * s shards (400 for its 100 clients) so every client gets
  // exactly s shards of equal size.
  if (unset("partition.shards_per_client"))
    c.partition.shards_per_client = c.data.dataset == "cifar100" ? 20 : 4;
  if (unset("partition.shards"))
    c.partition.shards = c.partition.shards_per_client * cl.num_clients;
  if (c.partition.scheme == "shards" &&
      c.partition.shards < c.partition.shards_per_client * cl.num_clients)
    return KeyError("partition.shards",
                    absl::StrCat(c.partition.shards, " shards cannot give ",
                                 cl.num_clients, " clients ",
                                 c.partition.shards_per_client, " each"),
                    {"partition.shards_per_client", "clients.num_clients"});
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExperimentConfig> ParseConfigWithOverrides(
    const std::string& yaml_text, const std::string& source,
    const std::vector<std::string>& overrides) {
  ExperimentConfig config;
  const std::vector<Field> fields = Fields(config);
  Origins seen;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ":", e.mark.line + 1, ": not valid YAML: ", e.msg));
  }
  if (!root.IsNull()) {
    if (auto st = Walk(source, root, "", fields, &seen); !st.ok()) return st;
  }
  for (const std::string& kv : overrides) {
    if (auto st = ApplyOverride(kv, fields, &seen); !st.ok()) return st;
  }
  if (auto st = Resolve(source, seen, config); !st.ok()) return st;
  return config;
}

absl::StatusOr<ExperimentConfig> ParseConfig(const std::string& yaml_text,
                                             const std::string& source) {
  return ParseConfigWithOverrides(yaml_text, source, {});
}

absl::StatusOr<ExperimentConfig> LoadConfig(
    const std::string& path, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("config file '", path, "' cannot be read"));
  }
  std::stringstream text;
  text << in.rdbuf();
  return ParseConfigWithOverrides(text.str(), path, overrides);
}

std::vector<std::string> ConfigKeys() {
  ExperimentConfig c;
  std::vector<std::string> keys;
  for (const Field& f : Fields(c)) keys.push_back(f.key);
  return keys;
}

namespace {

// Shortest decimal that reads back to the same double.
std::string ShortestDouble(double v) {
  for (int prec = 1; prec <= 17; ++prec) {
    std::string s = absl::StrFormat("%.*g", prec, v);
    if (std::strtod(s.c_str(), nullptr) == v) return s;
  }
  return absl::StrFormat("%.17g", v);
}

void EmitValue(YAML::Emitter& out, const Target& t) {
  if (auto* s = std::get_if<std::string*>(&t)) {
    out << YAML::DoubleQuoted << **s;
  } else if (auto* i = std::get_if<int64_t*>(&t)) {
    out << **i;
  } else if (auto* u = std::get_if<uint64_t*>(&t)) {
    out << **u;
  } else if (auto* d = std::get_if<double*>(&t)) {
    out << ShortestDouble(**d);
  } else if (auto* b = std::get_if<bool*>(&t)) {
    out << YAML::TrueFalseBool << **b;
  }
}

}  // namespace

std::string ConfigToYaml(const ExperimentConfig& config) {
  ExperimentConfig copy = config;
  YAML::Emitter out;
  out << YAML::BeginMap;
  std::string section;
  for (const Field& f : Fields(copy)) {
    const size_t dot = f.key.find('.');
    const std::string sec = dot == std::string::npos ? "" : f.key.substr(0, dot);
    if (sec != section) {
      if (!section.empty()) out << YAML::EndMap;
      if (!sec.empty()) out << YAML::Key << sec << YAML::Value << YAML::BeginMap;
      section = sec;
    }
    out << YAML::Key << f.key.substr(dot == std::string::npos ? 0 : dot + 1)
        << YAML::Value;
    EmitValue(out, f.target);
  }
  if (!section.empty()) out << YAML::EndMap;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace shefl
