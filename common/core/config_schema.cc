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
      {"name", "Run name: the results folder's prefix and the label in reports.",
       &c.name},
      // Checked against the method registry (common/fed/methods/).
      {"method",
       "The federated-learning method (docs/METHODS.md); its presets fill "
       "keys left unset.",
       &c.method},
      {"seed", "Seed of every random draw: partition, cohorts, assignment, "
       "initial models, batch order.", &c.seed},
      {"rounds", "Federated rounds to run (round.mode buffered: "
       "applications of each model's buffer, rounds x model.num_models in "
       "all).", &c.rounds, 1, 1e9},
      {"out_dir", "Results folder; empty: results/NAME-TIMESTAMP.",
       &c.out_dir},
      {"round_deadline_s", "Seconds a round waits for its updates before it "
       "closes with what arrived; later ones are refused as late.",
       &c.round_deadline_s, 0.001, 86400},
      {"device", "The coordinator's evaluation device: auto, cpu, cuda or "
       "cuda:N (daemons take theirs from --device).", &c.device},
      {"data.dataset", "Data set, read from its real file format "
       "(synthetic: a seeded Gaussian mixture).", &d.dataset, 0, 0,
       {"fmnist", "mnist", "cifar10", "cifar100", "svhn", "agnews",
        "synthetic"}},
      {"data.root", "Folder holding the data set's files; empty: the data "
       "set's standard folder.", &d.root},
      {"data.synthetic_train", "synthetic: training samples.",
       &d.synthetic_train, 1, 1e9},
      {"data.synthetic_test", "synthetic: test samples.", &d.synthetic_test,
       1, 1e9},
      {"data.synthetic_features", "synthetic: features per sample.",
       &d.synthetic_features, 1, 1e6},
      {"data.synthetic_classes", "synthetic: classes.",
       &d.synthetic_classes, 2, 1e6},
      {"data.text_vocab", "agnews: size of the hashed-token vocabulary.",
       &d.text_vocab, 2, 1e9},
      {"data.text_max_len", "agnews: tokens kept per text.",
       &d.text_max_len, 1, 1e6},
      {"partition.scheme", "How the training set is split over clients; "
       "own: each daemon reads its own folder, no split.", &p.scheme, 0, 0,
       {"iid", "dirichlet", "shards", "own"}},
      {"partition.alpha", "dirichlet: concentration of the label "
       "distribution per client (small: skewed, large: near iid).",
       &p.alpha, 1e-6, kInf},
      {"partition.shards", "shards: S, the number of label-sorted shards; "
       "unset: shards_per_client x num_clients.", &p.shards, 1, 1e9},
      {"partition.shards_per_client", "shards: s, shards per client; unset: "
       "4 (20 for cifar100).", &p.shards_per_client, 1, 1e9},
      {"partition.min_samples", "dirichlet: redraw until every client has "
       "at least this many samples.", &p.min_samples, 0, 1e9},
      // Checked against common/core/model_catalog.h.
      {"model.name", "Model architecture: cnn, mlp, resnet18, resnet34 or "
       "text.", &c.model.name},
      {"model.num_models", "M, the number of global models (ensemble "
       "members); fedavg-like methods and fens pin it to 1.",
       &c.model.num_models, 1, 1024},
      {"train.optimizer", "Local optimiser.", &t.optimizer, 0, 0,
       {"sgd", "adam"}},
      {"train.lr", "Local learning rate at round 1.", &t.lr, 1e-12, 1e3},
      {"train.momentum", "SGD momentum.", &t.momentum, 0, 1},
      {"train.weight_decay", "L2 weight decay of the local optimiser.",
       &t.weight_decay, 0, 1e3},
      {"train.local_epochs", "Passes over the client's shard per task.",
       &t.local_epochs, 0, 1e6},
      {"train.local_steps", "> 0: train this many mini-batch steps instead "
       "of local_epochs.", &t.local_steps, 0, 1e9},
      {"train.hpc_local_epochs", "> 0: HPCs train this many epochs instead "
       "(the SHEFL paper's Figure 7 baselines).",
       &t.hpc_local_epochs, 0, 1e6},
      {"train.batch_size", "Local mini-batch size.", &t.batch_size, 1, 1e7},
      {"train.lr_decay", "lr is multiplied by this every lr_decay_every "
       "rounds.", &t.lr_decay, 1e-6, 1},
      {"train.lr_decay_every", "Rounds between learning-rate decays.",
       &t.lr_decay_every, 1, 1e9},
      {"train.lr_schedule", "Within one local training: keep the round's "
       "lr, or anneal it to 0 (cosine).", &t.lr_schedule, 0, 0,
       {"constant", "cosine"}},
      {"train.prox_mu", "FedProx's mu: adds mu/2 ||w - w_global||^2 to the "
       "local loss; preset 0.01 for fedprox.", &t.prox_mu, 0, 1e6},
      {"train.precision", "Local training's forward pass and loss: fp32, "
       "bf16 autocast (a CPU with AVX512_BF16 or AMX, or CUDA; refused "
       "elsewhere), or auto (bf16 where the host has it, else fp32). "
       "Weights, updates and the wire stay fp32.",
       &t.precision, 0, 0, {"fp32", "bf16", "auto"}},
      {"train.stacking", "A daemon trains all of a round's tasks as one "
       "stacked computation (cnn, mlp; SGD): on, off, or auto (on where the "
       "device is CUDA). Equal to one task at a time up to float rounding.",
       &t.stacking, 0, 0, {"auto", "on", "off"}},
      {"compression.density", "rho: an LPC uploads k = ceil(rho d) of d "
       "coordinates; preset 0.1 for shefl, 1 (dense) for the others.",
       &k.density, 1e-9, 1},
      {"compression.resource_ratio", "r, an HPC's upload budget in LPC "
       "budgets, spread over its M models (shefl); 0: r = M.",
       &k.resource_ratio, 0, 1e6},
      {"compression.value_type", "Wire type of the uploaded values.",
       &k.value_type, 0, 0, {"fp32", "fp16", "bf16"}},
      {"compression.error_feedback", "Clients keep what top-k dropped and "
       "add it to their next delta of that model.", &k.error_feedback},
      {"compression.budget_bytes", "> 0: an LPC's upload budget in bytes "
       "per round, instead of density; k is the largest that fits.",
       &k.budget_bytes, 0, 1e15},
      {"clients.num_clients", "N, logical clients in the federation.",
       &cl.num_clients, 1, 1e8},
      {"clients.num_hpc", "Clients with ids 0 to num_hpc - 1 are HPCs, the "
       "rest LPCs.", &cl.num_hpc, 0, 1e8},
      {"clients.per_round_hpc", "C_h, HPCs sampled per round.",
       &cl.per_round_hpc, 0, 1e8},
      {"clients.per_round_lpc", "C_l, LPCs sampled per round.",
       &cl.per_round_lpc, 0, 1e8},
      {"clients.sampling", "clustered: one client from each of C fixed "
       "clusters a round; uniform: a plain draw.", &cl.sampling, 0, 0,
       {"clustered", "uniform"}},
      {"clients.over_selection", "e: sample ceil(C (1 + e)) clients and "
       "close the round on the first C updates.", &cl.over_selection, 0, 10},
      // The spelling; both set the same value.
      {"clients.over_select", "Another name for clients.over_selection.",
       &cl.over_selection, 0, 10},
      {"clients.min_connected", "Quorum of connected clients a round needs; "
       "0: the cohort size C or half of N, the larger.", &cl.min_connected, 0,
       1e8},
      {"clients.start_timeout_s", "Seconds to wait for all N clients before "
       "starting with the min_connected quorum.", &cl.start_timeout_s, 0,
       86400},
      {"clients.lost_after_s", "Seconds a daemon may be gone before later "
       "rounds go on without its clients (quorum permitting); 0: at once.",
       &cl.lost_after_s, 0, 86400},
      {"clients.give_up_after_s", "Seconds below the quorum before the run "
       "stops with an error (resumable); 0: never.", &cl.give_up_after_s, 0,
       31536000},
      {"clients.staller_strikes", "Missed deadlines in a row after which a "
       "client sits out; 0: off.", &cl.staller_strikes, 0, 1000},
      {"clients.staller_rounds_out", "Rounds a staller sits out.",
       &cl.staller_rounds_out, 0, 1000000},
      {"clients.slow_fraction", "shefl run: the share of its daemons "
       "(rounded up) started with --slowdown clients.slowdown.",
       &c.clients.slow_fraction, 0, 1},
      {"clients.slowdown", "shefl run: how many times as long the slow "
       "daemons' training takes.", &c.clients.slowdown, 1, 1e4},
      {"clients.hpc_capacity", "shefl: models an HPC trains a round, \"3\" "
       "or per HPC \"5,3,2\"; empty: all M.", &cl.hpc_capacity},
      {"hasa.allocation", "hasa: how a client's share of the M models is "
       "scored (hasa, or one of the paper's ablations).",
       &c.hasa.allocation, 0, 0,
       {"hasa", "uniform", "size", "mixed", "inverse"}},
      {"hasa.budget", "hasa: B, the size-weighted mean share of the M "
       "models a client trains.", &c.hasa.budget, 1e-6, 1},
      {"hasa.r_min", "hasa: smallest share of the M models a client gets.",
       &c.hasa.r_min, 1e-6, 1},
      {"hasa.r_max", "hasa: largest share of the M models a client gets.",
       &c.hasa.r_max, 1e-6, 1},
      {"hasa.gamma", "hasa, allocation mixed: weight of size against "
       "heterogeneity.", &c.hasa.gamma, 0, 1},
      {"hasa.smoothing", "hasa: added to every label count before the "
       "divergence.", &c.hasa.smoothing, 1e-12, 1e12},
      {"hasa.passes", "hasa: scale-and-project passes.", &c.hasa.passes, 1,
       1000},
      {"schedule.assignment", "Permutation form for LPCs' models: latin "
       "(cyclic shifts) or shuffle; auto: latin for shefl when C_l is a "
       "multiple of M.", &c.schedule.assignment, 0, 0,
       {"auto", "latin", "shuffle"}},
      {"aggregation.rule", "How a model's updates are combined "
       "(docs/METHODS.md); methods without tiers pin uniform.", &a.rule, 0, 0,
       {"workload_aware", "uniform", "paper", "paper_per_model"}},
      {"aggregation.hpc_share", "beta: weight of the HPC mean against the "
       "LPC mean (workload_aware).", &a.hpc_share, 0, 1},
      {"aggregation.weight_by_samples", "Weigh each update by its client's "
       "registered shard size instead of 1.", &a.weight_by_samples},
      {"aggregation.server_lr", "eta_g, the server's step on the aggregate.",
       &a.server_lr, 1e-9, 1e6},
      {"aggregation.server_optimizer", "Server optimiser on each member's "
       "aggregate: none, momentum (FedAvgM) or adam (FedAdam).",
       &a.server_optimizer, 0, 0, {"none", "momentum", "adam"}},
      {"aggregation.server_momentum", "mu for momentum; beta1 for adam.",
       &a.server_momentum, 0, 0.999999},
      {"aggregation.server_beta2", "adam: beta2.", &a.server_beta2, 0,
       0.999999},
      {"aggregation.server_epsilon", "adam: tau, the epsilon of the "
       "denominator.", &a.server_epsilon, 1e-12, 1e3},
      {"aggregation.reduction", "How updates are summed: client_order "
       "(buffered, folded in client-id order) or fixed_point (streamed into "
       "exact 128-bit fixed-point sums; for thousands of clients a round).",
       &a.reduction, 0, 0, {"client_order", "fixed_point"}},
      {"aggregation.robust", "Bound every update (robust.*) before it is "
       "aggregated; honest updates are untouched.", &a.robust},
      {"aggregation.secure", "Secure aggregation: off, common_support (the "
       "coordinator learns only each model's weighted sum on a public "
       "support) or clear_support (the same support and rounding without "
       "masks, the baseline).", &a.secure, 0, 0,
       {"off", "common_support", "clear_support"}},
      {"secure.support_fraction", "K, the support's size, as a fraction of "
       "d; 0: K = k.", &c.secure.support_fraction, 0, 1},
      {"secure.support", "How the common support is chosen: accumulator (the "
       "top of the public accumulator and explore_fraction drawn), layout "
       "(small tensors whole, the accumulator's top, and a share drawn) or, "
       "with clear_support only, oracle (every coordinate sent in the "
       "clear; the coordinator keeps the top K of the sum: the ceiling).",
       &c.secure.support, 0, 0, {"accumulator", "layout", "oracle"}},
      {"secure.whole_max", "layout: tensors of at most this many entries "
       "are always in the support, whole (up to K/2).",
       &c.secure.whole_max, 0, 1e12},
      {"secure.layout_explore", "layout: the least share of the support "
       "outside the whole tensors drawn from the round seed (1/t in round t "
       "while larger).", &c.secure.layout_explore, 0, 1},
      {"secure.vote", "layout: parties add, under the same masks, how many "
       "of their clients' own top-k positions fall in each row and column "
       "of the larger tensors; the next support follows those sums.",
       &c.secure.vote},
      {"secure.explore_fraction", "Share of the support drawn from the "
       "round seed; the rest is the top of the accumulator.",
       &c.secure.explore_fraction, 0, 1},
      {"secure.accumulator_decay", "Decay of the public accumulator of "
       "global updates the support is ranked by.",
       &c.secure.accumulator_decay, 0, 1},
      {"secure.threshold", "t of n parties needed to unmask; 0: "
       "floor(2n/3) + 1. A t that is not a majority of a session's n "
       "(below floor(n/2) + 1) abandons that session: parties refuse it.",
       &c.secure.threshold, 0, 1e6},
      {"secure.scale_bits", "f: values travel as round(x 2^f) mod 2^32.",
       &c.secure.scale_bits, 1, 30},
      {"secure.word_bits", "16 or 32: the bits of each value's word on the "
       "wire; 16 halves the input and needs n ceil(c 2^f) < 2^15 (lower "
       "secure.scale_bits).", &c.secure.word_bits, 16, 32},
      {"secure.clip", "c: each value is clipped to [-c, c] (the rest stays "
       "in the residual).", &c.secure.clip, 1e-12, 1e9},
      {"secure.min_parties", "A model trained by fewer daemons in a round "
       "is not aggregated that round.", &c.secure.min_parties, 2, 1e6},
      {"secure.stage_timeout_s", "How long the key, share and unmask "
       "stages wait for a party.", &c.secure.stage_timeout_s, 0.1, 1e6},
      {"secure.blame_window", "Rounds of sessions that blame for a corrupt "
       "sum is decided over (a party in a clean session is cleared).",
       &c.secure.blame_window, 1, 1e6},
      {"secure.bench_rounds", "Rounds a daemon blamed for a corrupt sum "
       "sits out; 0: the rest of the run.", &c.secure.bench_rounds, 0, 1e9},
      {"secure.graph_above", "SecAgg+: a session of more parties than this "
       "masks with and shares to each party's neighbours in a random graph "
       "only; 0: all pairs always.", &c.secure.graph_above, 0, 1e6},
      {"secure.collude_fraction", "SecAgg+: the fraction of parties that "
       "may collude with the coordinator; the graph keeps them from "
       "unmasking anyone but with probability 2^-40.",
       &c.secure.collude_fraction, 0, 0.9},
      {"secure.dropout_fraction", "SecAgg+: the fraction of parties that "
       "may drop; the sum is still unmasked but with probability 2^-20.",
       &c.secure.dropout_fraction, 0, 0.9},
      {"secure.diagnose", "clear_support only: parties also send their dense "
       "sums in the clear, and each round's line says the share of the sum's "
       "energy the support held and of the clients' own top-k it sent.",
       &c.secure.diagnose},
      {"secure.graph_degree", "SecAgg+: each party's neighbours, even; 0: "
       "the least degree the two fractions allow.",
       &c.secure.graph_degree, 0, 1e6},
      {"robust.max_abs", "An update with a coordinate above this magnitude "
       "is refused; 0: no bound.", &c.robust.max_abs, 0, 1e30},
      {"robust.clip_multiple", "Updates with an L2 norm above this x the "
       "round's median norm are scaled down to it; 0: off.",
       &c.robust.clip_multiple, 0, 1e6},
      {"robust.refuse_multiple", "Updates with an L2 norm above this x the "
       "median norm are left out; 0: off.", &c.robust.refuse_multiple, 0,
       1e6},
      {"robust.norm_bound", "Absolute L2 bound every update is scaled down "
       "to; 0: none.", &c.robust.norm_bound, 0, 1e30},
      {"robust.trim", "Coordinate-wise trimming fraction over a member's "
       "senders; 0: off, 0.5: the median.", &c.robust.trim, 0, 0.5},
      {"robust.shard_multiple", "A claimed shard size above this x the "
       "median claim is taken as that bound; 0: as claimed.",
       &c.robust.shard_multiple, 0, 1e6},
      {"privacy.mode", "Differential privacy: off; central (the "
       "coordinator clips each client's joint update and noises each "
       "model's sum); or distributed (with aggregation.secure: "
       "common_support, each daemon clips its clients and adds Skellam "
       "noise inside the masked sums; docs/PRIVACY.md).", &c.privacy.mode,
       0, 0, {"off", "central", "distributed"}},
      {"privacy.noise_multiplier", "z: the noise's standard deviation over "
       "the sensitivity.", &c.privacy.noise_multiplier, 0.01, 1e6},
      {"privacy.clip", "S: the L2 bound of a client's updates of a round, "
       "all models together (adaptive_clip: the first round's).",
       &c.privacy.clip, 1e-9, 1e9},
      {"privacy.target_epsilon", "The run stops before a round that would "
       "take epsilon past this; 0: no stop.", &c.privacy.target_epsilon, 0,
       1e6},
      {"privacy.delta", "The delta of (epsilon, delta); 0: 1 / N^1.1 for N "
       "clients.", &c.privacy.delta, 0, 0.1},
      {"privacy.adaptive_clip", "The clip follows privacy.clip_quantile of "
       "the clients' norms from a noised count (Andrew et al. 2021).",
       &c.privacy.adaptive_clip},
      {"privacy.clip_quantile", "adaptive_clip: the target share of clients "
       "under the clip (gamma).", &c.privacy.clip_quantile, 0.01, 0.99},
      {"privacy.clip_lr", "adaptive_clip: S *= exp(-clip_lr (share under S "
       "- clip_quantile)) each round.", &c.privacy.clip_lr, 0, 10},
      {"privacy.count_noise", "adaptive_clip: the count's noise (sigma_b); "
       "0: the expected cohort / 20.", &c.privacy.count_noise, 0, 1e9},
      {"privacy.noise_seed", "0: a fresh noise key from the operating "
       "system each run (distributed: each daemon's own); otherwise the keys "
       "derive from this (repeatable runs, no guarantee against who knows "
       "it).", &c.privacy.noise_seed},
      {"round.mode", "synchronous: rounds that wait for their cohort; "
       "buffered: tasks stay in flight and each model applies a buffer of "
       "updates as they arrive (FedBuff; docs/DESIGN.md).", &c.round.mode, 0,
       0, {"synchronous", "buffered"}},
      {"buffered.concurrency", "buffered: tasks in flight (a task's slot "
       "frees once its updates are applied or lost); 0: the cohort's size.",
       &c.buffered.concurrency, 0, 1e7},
      {"buffered.size", "buffered: updates in a model's buffer when it is "
       "applied; 0: the cohort's size.", &c.buffered.size, 0, 1e7},
      {"buffered.staleness", "buffered: an update's weight s(tau), tau = "
       "applications of its model since it was handed out: sqrt (1/sqrt(1 + "
       "tau)), poly:A ((1 + tau)^-A) or none (1).", &c.buffered.staleness},
      {"buffered.max_staleness", "buffered: updates staler than this are "
       "refused as late.", &c.buffered.max_staleness, 0, 1e9},
      {"buffered.server_lr", "buffered: eta_g, the step of x += eta_g "
       "sum(s w u) / sum(s w).", &c.buffered.server_lr, 1e-6, 1e3},
      {"buffered.record_uploads", "buffered: keep every applied update in "
       "uploads/ beside buffer_log.jsonl, for shefl-coordinator --replay.",
       &c.buffered.record_uploads},
      {"eval.every", "Evaluate the models every this many rounds (buffered: "
       "this many x model.num_models applications).",
       &c.eval.every, 1, 1e9},
      {"eval.threshold", "Ensemble accuracy that counts as converged "
       "(rounds_to_threshold).", &c.eval.threshold, 0, 1},
      {"eval.max_test_samples", "> 0: evaluate on the first this many test "
       "samples.", &c.eval.max_test_samples, 0, 1e12},
      {"eval.batch_size", "Evaluation batch size (256 stays in cache; 1000 "
       "was 1.7x slower on a CPU).", &c.eval.batch_size, 1, 1e7},
      {"eval.precision", "The coordinator's evaluation: fp32, bf16 "
       "autocast where the hardware has it, or auto (as train.precision).",
       &c.eval.precision, 0, 0, {"fp32", "bf16", "auto"}},
      {"eval.client_holdout", "Fraction of each shard held out for "
       "client-level accuracy (mean, worst, 10th percentile); 0: off.",
       &c.eval.client_holdout, 0, 0.999999},
      {"eval.gamma", "Personalised ensemble weights softmax(-loss / gamma) "
       "per client (Fed-ensemble); 0: off.", &c.eval.gamma, 0, 1e12},
      {"fens.aggregator", "fens: how the client models' outputs are "
       "combined.", &c.fens.aggregator, 0, 0,
       {"mean", "weighted", "linear", "nn"}},
      {"fens.proxy_fraction", "fens: fraction of the training set the "
       "coordinator keeps as proxy data for the aggregator.",
       &c.fens.proxy_fraction, 0, 0.9},
      {"fens.hidden_units", "fens, aggregator nn: hidden ReLU units.",
       &c.fens.hidden_units, 1, 1e6},
      {"fens.epochs", "fens, aggregator linear or nn: passes over the proxy "
       "set.", &c.fens.epochs, 0, 1e6},
      {"fens.lr", "fens: the aggregator's Adam step size.", &c.fens.lr,
       1e-12, 1e3},
      {"fens.lr_decay", "fens: lr is multiplied by this after every epoch.",
       &c.fens.lr_decay, 1e-6, 1},
      {"fens.batch_size", "fens: the aggregator's batch size.",
       &c.fens.batch_size, 1, 1e7},
  };
}


}  // namespace config_schema
}  // namespace shefl
