#include "common/fed/config_load.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/core/model_catalog.h"
#include "common/core/status_macros.h"
#include "common/fed/buffered_plan.h"
#include "common/fed/capacity.h"
#include "common/fed/methods/registry.h"
#include "common/fed/privacy_plan.h"

namespace shefl {
namespace {

// Presets and refusals every method shares, read from its traits.
void ResolveByTraits(const MethodTraits& t, ConfigResolution& r) {
  ExperimentConfig& c = r.config();
  if (!c.clients.hpc_capacity.empty()) {
    if (!t.capacity_levels) {
      r.Refuse("clients.hpc_capacity",
               absl::StrCat("capacity levels are SHEFL's HPCs'; method ",
                            c.method, " has none (hasa allocates its own "
                            "capacities: see hasa.*)"),
               {"method"});
    } else if (auto levels = ParseCapacityLevels(c.clients.hpc_capacity,
                                                 c.model.num_models);
               !levels.ok()) {
      r.Refuse("clients.hpc_capacity",
               std::string(levels.status().message())
                   .substr(std::string("key 'clients.hpc_capacity': ").size()),
               {"model.num_models"});
    }
  }
  // The papers' baselines upload dense deltas; top-k is theirs only when
  // asked for (section 2, "Baselines in the same runtime").
  if (!r.IsSet("compression.density"))
    c.compression.density = t.default_density;
  // A byte budget decides k by itself. The method's default density may
  // stand beside it (the resolved config writes both and must load again);
  // any other density contradicts it.
  if (c.compression.budget_bytes > 0 &&
      c.compression.density != t.default_density)
    r.Refuse("compression.budget_bytes",
             absl::StrCat("a byte budget decides k, but compression.density "
                          "is also set (", c.compression.density,
                          "); give one or the other"),
             {"compression.density"});
  if (t.assignment != Assignment::kTiers)
    r.Pin("aggregation.rule", "uniform",
          absl::StrCat("method ", c.method,
                       " has no tiers; only 'uniform' applies"));
}

// The cohort against the clients there are.
void CheckCohort(bool tiered, ConfigResolution& r) {
  const ClientsConfig& cl = r.config().clients;
  if (cl.num_hpc > cl.num_clients)
    return r.Refuse("clients.num_hpc",
                    absl::StrCat(cl.num_hpc, " HPCs but only ",
                                 cl.num_clients, " clients"),
                    {"clients.num_clients"});
  if (cl.per_round_hpc + cl.per_round_lpc == 0)
    return r.Refuse("clients.per_round_lpc",
                    "the cohort is empty (per_round_hpc + per_round_lpc = 0)",
                    {"clients.per_round_hpc"});
  if (tiered) {
    if (cl.per_round_hpc > cl.num_hpc)
      return r.Refuse("clients.per_round_hpc",
                      absl::StrCat(cl.per_round_hpc, " per round but only ",
                                   cl.num_hpc, " HPCs"),
                      {"clients.num_hpc", "clients.num_clients"});
    if (cl.per_round_lpc > cl.num_clients - cl.num_hpc)
      return r.Refuse("clients.per_round_lpc",
                      absl::StrCat(cl.per_round_lpc, " per round but only ",
                                   cl.num_clients - cl.num_hpc, " LPCs"),
                      {"clients.num_hpc", "clients.num_clients"});
  } else if (cl.per_round_hpc + cl.per_round_lpc > cl.num_clients) {
    return r.Refuse("clients.per_round_lpc",
                    "cohort larger than clients.num_clients",
                    {"clients.per_round_hpc", "clients.num_clients"});
  }
  if (cl.min_connected > cl.num_clients)
    r.Refuse("clients.min_connected",
             absl::StrCat(cl.min_connected, " but only ", cl.num_clients,
                          " clients"),
             {"clients.num_clients"});
}

// Training, evaluation and partition keys against each other.
void CheckTrainingAndData(ConfigResolution& r) {
  ExperimentConfig& c = r.config();
  if (c.train.hpc_local_epochs > 0 && c.clients.num_hpc == 0)
    r.Refuse("train.hpc_local_epochs",
             "clients.num_hpc is 0: no client is an HPC", {"clients.num_hpc"});
  if (c.partition.scheme == "own") {
    // The coordinator rebuilds every shard from the seed to simulate the
    // clients' own evaluation (server/round/client_evaluator.h): not with 'own'.
    for (const char* key : {"eval.client_holdout", "eval.gamma"}) {
      const double v = std::string(key) == "eval.gamma" ? c.eval.gamma
                                                        : c.eval.client_holdout;
      if (v > 0)
        r.Refuse(key,
                 "the coordinator computes it from each client's shard, "
                 "which it cannot know under partition.scheme 'own'",
                 {"partition.scheme"});
    }
  }
  // What every daemon would refuse (CohortSupports), refused once here.
  if (c.train.stacking == "on" && !StacksInCohort(c.model.name))
    r.Refuse("train.stacking",
             absl::StrCat("on cannot stack model.name '", c.model.name,
                          "' (BatchNorm, or no stacked forward); use auto or "
                          "off"),
             {"model.name"});
  if (c.train.stacking == "on" && c.train.optimizer != "sgd")
    r.Refuse("train.stacking",
             "on steps SGD only, not train.optimizer 'adam'; use auto or off",
             {"train.optimizer"});
  if (c.train.local_steps == 0 && c.train.local_epochs == 0)
    r.Refuse("train.local_epochs",
             "0 epochs and 0 steps: nothing would be trained",
             {"train.local_steps"});
  // 000's pathological recipe: s = 4 shards a client, 20 for CIFAR-100,
  // and S = N * s shards (400 for its 100 clients) so every client gets
  // exactly s shards of equal size.
  const int64_t n = c.clients.num_clients;
  if (!r.IsSet("partition.shards_per_client"))
    c.partition.shards_per_client = c.data.dataset == "cifar100" ? 20 : 4;
  if (!r.IsSet("partition.shards"))
    c.partition.shards = c.partition.shards_per_client * n;
  if (c.partition.scheme == "shards" &&
      c.partition.shards < c.partition.shards_per_client * n)
    r.Refuse("partition.shards",
             absl::StrCat(c.partition.shards, " shards cannot give ", n,
                          " clients ", c.partition.shards_per_client, " each"),
             {"partition.shards_per_client", "clients.num_clients"});
}

// fixed_point folds each update as it arrives and keeps none, so nothing
// that needs the round's whole set of updates can go with it.
void CheckReduction(ConfigResolution& r) {
  const ExperimentConfig& c = r.config();
  if (c.aggregation.reduction != "fixed_point") return;
  if (TraitsOf(c.method).round_shape == RoundShape::kOneShot)
    return r.Refuse("aggregation.reduction",
                    "method " + c.method +
                        " keeps every client's model; it needs client_order",
                    {"method"});
  if (!c.aggregation.robust) return;
  const std::pair<const char*, double> whole_round[] = {
      {"robust.clip_multiple", c.robust.clip_multiple},
      {"robust.refuse_multiple", c.robust.refuse_multiple},
      {"robust.norm_bound", c.robust.norm_bound},
      {"robust.trim", c.robust.trim}};
  for (const auto& [key, value] : whole_round)
    if (value > 0)
      return r.Refuse(
          "aggregation.reduction",
          absl::StrCat("fixed_point keeps no update, but ", key, " = ", value,
                       " needs every update of the round at close; set it "
                       "to 0 (robust.max_abs still bounds each update as it "
                       "arrives) or use client_order"),
          {key});
}

// Secure aggregation sees only each model's sum: nothing that reads one
// update can go with it, and the fixed-point sum must not overflow.
void CheckSecure(ConfigResolution& r) {
  ExperimentConfig& c = r.config();
  if (c.aggregation.secure == "off") return;
  const char* why = "secure aggregation shows the coordinator only each "
                    "model's sum, never one update";
  if (TraitsOf(c.method).round_shape == RoundShape::kOneShot)
    return r.Refuse("aggregation.secure",
                    absl::StrCat("method ", c.method, " keeps every client's "
                                 "model; ", why),
                    {"method"});
  // What lies off the support, and what clipping and rounding take, stays
  // in each client's residual: without it, it would be lost every round.
  r.Pin("compression.error_feedback", "true",
        "secure aggregation keeps what it does not send in the residual");
  // The per-update bounds read each update; secure.clip bounds each value.
  r.Pin("aggregation.robust", "false",
        absl::StrCat(why, "; secure.clip bounds every value instead"));
  if (c.aggregation.reduction != "client_order")
    r.Refuse("aggregation.reduction",
             "secure aggregation sums in fixed point itself; leave "
             "aggregation.reduction at client_order",
             {"aggregation.secure"});
  if (c.clients.over_selection > 0)
    r.Refuse("clients.over_selection",
             "a secure round waits for its parties, not for the first C "
             "clients; set it to 0",
             {"aggregation.secure"});
  if (c.secure.support == "oracle" && c.aggregation.secure != "clear_support")
    r.Refuse("secure.support",
             "the oracle support needs every update in the clear; set "
             "aggregation.secure to clear_support",
             {"aggregation.secure"});
  if (c.secure.diagnose && c.aggregation.secure != "clear_support")
    r.Refuse("secure.diagnose",
             "the diagnosis sends each party's dense sum in the clear; set "
             "aggregation.secure to clear_support (masked runs give the same "
             "models)",
             {"aggregation.secure"});
  if (c.secure.diagnose && c.secure.support == "oracle")
    r.Refuse("secure.diagnose",
             "the oracle support logs its energy itself; set secure.support "
             "to accumulator or layout",
             {"secure.support"});
  if (c.secure.vote && c.secure.support != "layout")
    r.Refuse("secure.vote",
             "the vote chooses the layout support's V; set secure.support "
             "to layout",
             {"secure.support"});
  if (c.secure.collude_fraction + c.secure.dropout_fraction > 0.9)
    r.Refuse("secure.collude_fraction",
             absl::StrCat("with secure.dropout_fraction it is ",
                          c.secure.collude_fraction + c.secure.dropout_fraction,
                          " of the parties; at most 0.9 leaves a graph "
                          "smaller than all pairs"),
             {"secure.dropout_fraction"});
  if (c.secure.graph_degree % 2 != 0)
    r.Refuse("secure.graph_degree",
             "must be even (a ring joined to k / 2 parties on each side)", {});
  if (c.secure.threshold > 0 && c.secure.threshold < 2)
    r.Refuse("secure.threshold", "t = 1 would let one party unmask alone",
             {"aggregation.secure"});
  // Every client's word is at most ceil(c 2^f) in magnitude, and a model
  // has at most the cohort's clients: their sum must stay below 2^31.
  const double n = static_cast<double>(c.clients.per_round_hpc +
                                       c.clients.per_round_lpc);
  const double word = std::ceil(c.secure.clip * std::ldexp(1.0, static_cast<int>(
                                                    c.secure.scale_bits)));
  if (c.secure.word_bits != 16 && c.secure.word_bits != 32)
    return r.Refuse("secure.word_bits", "must be 16 or 32", {});
  if (c.secure.word_bits == 16 && n * word >= std::ldexp(1.0, 15))
    return r.Refuse("secure.word_bits",
                    absl::StrCat("16-bit words hold sums below 2^15, and ", n,
                                 " clients' values of up to ceil(c 2^f) = ",
                                 word, " can reach ", n * word,
                                 "; lower secure.scale_bits or secure.clip, "
                                 "or set secure.word_bits to 32"),
                    {"secure.scale_bits", "secure.clip"});
  if (n * word >= std::ldexp(1.0, 31))
    r.Refuse("secure.clip",
             absl::StrCat("the sum of ", n, " clients' values of up to ",
                          c.secure.clip, " at scale 2^", c.secure.scale_bits,
                          " can overflow 32 bits (n c 2^f >= 2^31); lower "
                          "secure.clip or secure.scale_bits"),
             {"secure.scale_bits", "clients.per_round_lpc"});
}

absl::Status CheckNames(const ParsedConfig& p) {
  const ExperimentConfig& c = p.config;
  auto where = [&](const char* key) {
    auto it = p.origins.find(key);
    return it == p.origins.end() ? p.source : it->second;
  };
  if (auto m = FindMethod(c.method); !m.ok())
    return absl::InvalidArgumentError(absl::StrCat(
        where("method"), ": key 'method': ", m.status().message()));
  if (!IsKnownModel(c.model.name))
    return absl::InvalidArgumentError(absl::StrCat(
        where("model.name"), ": key 'model.name': '", c.model.name,
        "' is not one of: ", absl::StrJoin(ModelCatalog(), ", ")));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExperimentConfig> ParseConfigWithOverrides(
    const std::string& yaml_text, const std::string& source,
    const std::vector<std::string>& overrides) {
  SHEFL_ASSIGN_OR_RETURN(auto parsed,
                         ParseConfigKeys(yaml_text, source, overrides));
  SHEFL_RETURN_IF_ERROR(CheckNames(parsed));
  const Method* method = *FindMethod(parsed.config.method);
  const MethodTraits traits = method->traits();
  ConfigResolution r(&parsed);
  method->Resolve(r);
  ResolveByTraits(traits, r);
  SHEFL_RETURN_IF_ERROR(r.Result());
  CheckCohort(traits.assignment == Assignment::kTiers, r);
  CheckTrainingAndData(r);
  CheckReduction(r);
  CheckSecure(r);
  CheckPrivacy(r);
  CheckBuffered(r);
  SHEFL_RETURN_IF_ERROR(r.Result());
  return std::move(parsed.config);
}

absl::StatusOr<ExperimentConfig> ParseConfig(const std::string& yaml_text,
                                             const std::string& source) {
  return ParseConfigWithOverrides(yaml_text, source, {});
}

absl::StatusOr<ExperimentConfig> LoadConfig(
    const std::string& path, const std::vector<std::string>& overrides) {
  SHEFL_ASSIGN_OR_RETURN(auto text, ReadConfigText(path));
  return ParseConfigWithOverrides(text, path, overrides);
}

}  // namespace shefl
