#include "common/core/config_schema.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shefl {
namespace config_schema {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

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

}  // namespace

std::string Hint(const std::string& key, const std::vector<Field>& fields) {
  std::string best;
  size_t best_d = 4;  // only close matches are worth suggesting
  for (const Field& f : fields) {
    size_t dist = EditDistance(key, f.key);
    if (dist < best_d) best_d = dist, best = f.key;
  }
  return best.empty() ? "" : absl::StrCat(" (did you mean '", best, "'?)");
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

std::vector<Field> Fields(ExperimentConfig& c) {
  auto& d = c.data;
  auto& p = c.partition;
  auto& t = c.train;
  auto& k = c.compression;
  auto& cl = c.clients;
  auto& a = c.aggregation;
  return {
      {"name", &c.name},
      // Checked against the method registry (common/fed/methods/).
      {"method", &c.method},
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
      // Checked against common/core/model_catalog.h.
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
      {"clients.staller_strikes", &cl.staller_strikes, 0, 1000},
      {"clients.staller_rounds_out", &cl.staller_rounds_out, 0, 1000000},
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
      {"aggregation.server_optimizer", &a.server_optimizer, 0, 0,
       {"none", "momentum", "adam"}},
      {"aggregation.server_momentum", &a.server_momentum, 0, 0.999999},
      {"aggregation.server_beta2", &a.server_beta2, 0, 0.999999},
      {"aggregation.server_epsilon", &a.server_epsilon, 1e-12, 1e3},
      {"aggregation.robust", &a.robust},
      {"robust.max_abs", &c.robust.max_abs, 0, 1e30},
      {"robust.clip_multiple", &c.robust.clip_multiple, 0, 1e6},
      {"robust.refuse_multiple", &c.robust.refuse_multiple, 0, 1e6},
      {"robust.norm_bound", &c.robust.norm_bound, 0, 1e30},
      {"robust.trim", &c.robust.trim, 0, 0.5},
      {"robust.shard_multiple", &c.robust.shard_multiple, 0, 1e6},
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


}  // namespace config_schema
}  // namespace shefl
