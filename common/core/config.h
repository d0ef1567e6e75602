// The experiment config: typed structs with defaults, read from YAML.
// Every module takes the struct of its own section. This layer reads keys
// (config_yaml.cc: unknown keys, wrong types and out-of-range values are
// refused with the file, line and dotted key); the method presets and the
// checks across keys are the method registry's (common/fed/config_load.h,
// which is what binaries call). Plain data and pure functions; thread-safe.
#ifndef SHEFL_COMMON_CORE_CONFIG_H_
#define SHEFL_COMMON_CORE_CONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

struct DataConfig {
  // fmnist | mnist | cifar10 | cifar100 | svhn | agnews | synthetic
  std::string dataset = "fmnist";
  std::string root;  // empty: the dataset's standard folder
  // synthetic (seeded Gaussian mixture)
  int64_t synthetic_train = 2000;
  int64_t synthetic_test = 500;
  int64_t synthetic_features = 20;
  int64_t synthetic_classes = 4;
  // agnews: hashed-token vocabulary and sequence length
  int64_t text_vocab = 1 << 16;
  int64_t text_max_len = 64;
};

struct PartitionConfig {
  std::string scheme = "dirichlet";  // iid | dirichlet | shards | own
  double alpha = 0.6;                // dirichlet
  int64_t shards = 400;              // shards: S; unset, s * num_clients
  int64_t shards_per_client = 4;     // s; unset, 4 (20 for cifar100, 000)
  int64_t min_samples = 1;           // dirichlet: redraw until each client has this many
};

struct ModelConfig {
  std::string name = "cnn";  // cnn | mlp | resnet18 | resnet34 | text
  int64_t num_models = 5;    // M, the ensemble size
};

struct TrainConfig {
  std::string optimizer = "sgd";  // sgd | adam
  double lr = 0.01;
  double momentum = 0.0;
  double weight_decay = 1e-3;
  int64_t local_epochs = 1;
  int64_t local_steps = 0;       // > 0: train this many steps instead of epochs
  // > 0: HPCs (client ids below clients.num_hpc) train this many epochs
  // instead, under every method: SHEFL's HPCs, and the HPCs of Figure 7's
  // "restricted Fed-ensemble" and "all-HPC FedAvg" (000), whose clients
  // keep the method's assignment and aggregation.
  int64_t hpc_local_epochs = 0;
  int64_t batch_size = 16;
  double lr_decay = 0.99;        // lr *= lr_decay every lr_decay_every rounds
  int64_t lr_decay_every = 10;
  // Within one local training: "constant" keeps the round's lr; "cosine"
  // anneals it to 0 over the local epochs (or over local_steps when set),
  // PyTorch's CosineAnnealingLR(T_max = epochs), as FENS (002) trains.
  std::string lr_schedule = "constant";  // constant | cosine
  double prox_mu = 0.0;          // FedProx: + mu/2 * ||w - w_global||^2
  // fp32 | bf16: the forward pass and loss under autocast to bf16 where the
  // hardware has it (common/learn/precision.h); weights stay fp32.
  std::string precision = "fp32";
  // auto | on | off: a daemon trains all of a round's tasks as one stacked
  // computation (common/learn_stacked/cohort_train.h); auto: where the device
  // is CUDA. Results agree with one task at a time up to float rounding.
  std::string stacking = "auto";
};

// The top-k budget of every (client, model) pair (docs/DESIGN.md,
// "Compression budget").
// SHEFL: an LPC sends k_l = ceil(rho * d) of its one model; an HPC spreads
// r LPC budgets over its M models, k_h = ceil((r / M) * rho * d). The
// baselines (fedensemble, fedavg, fedprox) send k = ceil(rho * d) for
// every client, and their preset is rho = 1: dense, as in their papers
// (k = d, which the codec sends without an index stream); setting
// `density` (or `budget_bytes`) makes top-k an explicit option for them.
struct CompressionConfig {
  // rho. Unset: 0.1 for shefl, 1 (dense) for the baselines.
  double density = 0.1;
  double resource_ratio = 0.0;   // r (HPC:LPC), SHEFL only; 0 means r = M
  std::string value_type = "fp32";  // fp32 | fp16 | bf16
  bool error_feedback = false;
  // > 0: k from bytes instead of rho. B is what one LPC may upload per
  // round (the encoded delta of its one model, common/sparse/codec.h); a SHEFL
  // HPC has r * B, split evenly over its M models; a baseline client has
  // B for its one model. k is the largest k whose worst-case encoding fits
  // (LargestKForBudget): k_l = K(B), k_h = K(floor(r * B / M)). Refused
  // with a density other than the method's default (say one or the
  // other), and at start when the budget cannot carry k = 1.
  int64_t budget_bytes = 0;
};

struct ClientsConfig {
  int64_t num_clients = 100;     // N
  // Tiers come from the client id under every method: ids [0, num_hpc) are
  // HPCs, the rest LPCs. SHEFL samples, assigns and aggregates by tier; for
  // the baselines a tier sets only the local epochs (train.hpc_local_epochs)
  // and the bytes_up_by_tier books, and 0 makes every client an LPC.
  int64_t num_hpc = 50;
  int64_t per_round_hpc = 5;     // C_h
  int64_t per_round_lpc = 5;     // C_l
  std::string sampling = "clustered";  // clustered | uniform
  double over_selection = 0.0;   // e: sample ceil(C*(1+e)), keep the first C
  // Capacity levels (000/001, shefl only): how many of the M models an HPC
  // trains a round. "" : all M. "3": every HPC 3. "5,3,2": the HPC with id
  // i takes entry i mod 3. A daemon's declared capacity (shefl-client
  // --capacity) overrides it for its clients. Which models rotates with
  // the round so every model is covered (common/fed/capacity.h); aggregation
  // counts the updates each model actually received (`paper` falls back to
  // `paper_per_model` in a round where an HPC trains fewer than M).
  std::string hpc_capacity;
  // Liveness (docs/DESIGN.md, "Trust and faults"): round 1 starts when
  // every client is connected, or after start_timeout_s with the quorum.
  // A later round waits for a missing daemon until it has been silent for
  // lost_after_s (a restart brings it back sooner), then goes on with the
  // connected clients if the quorum holds; below it, it waits, and after
  // give_up_after_s stops the run (resumable). Rounds sample connected
  // clients only.
  int64_t min_connected = 0;     // the quorum; 0: max(C, ceil(N/2))
  double start_timeout_s = 60;
  double lost_after_s = 60;      // 0: go on at once
  double give_up_after_s = 7200; // 0: wait for ever
  // Stallers (server/state/staller_book.h): a sampled client that sends no
  // update before a round's deadline gets a strike; after staller_strikes
  // in a row it sits out the next staller_rounds_out rounds. 0: off.
  int64_t staller_strikes = 3;
  int64_t staller_rounds_out = 5;
  // Heterogeneous speeds for experiments: `shefl run` starts this share of
  // its daemons (rounded up) with `shefl-client --slowdown slowdown`, so
  // their training takes that many times as long.
  double slow_fraction = 0;
  double slowdown = 1;
};

struct ScheduleConfig {
  // auto | latin | shuffle. auto: for shefl latin when the LPC rows
  // (C_l) are a multiple of M, else shuffle; for the baselines always
  // shuffle (Fed-ensemble's Algorithm 1 draws independent row shuffles).
  std::string assignment = "auto";
};

struct AggregationConfig {
  // workload_aware | uniform | paper | paper_per_model (common/fed/aggregate.h
  // has the formulas). paper: Eq. 2 of 000 with the round's planned C_h and
  // C_l, so a model missing an update gets a larger or smaller step (0.6 D_H
  // without its LPC update in the paper's setting). paper_per_model: 001's
  // per-submodel coefficients from the updates received for the model, so
  // the step stays (D_H + D_L) / 2 (D_H or D_L alone when the other group
  // sent nothing). Both equal workload_aware in the paper's own setting
  // (M = C_h = C_l = 5, latin) and ignore weight_by_samples and hpc_share.
  std::string rule = "workload_aware";
  double hpc_share = 0.5;               // beta
  bool weight_by_samples = false;
  double server_lr = 1.0;               // eta_g
  // Server optimisation of each member's aggregated step Delta (the rule's
  // result, eta_g included; common/fed/server_optimizer.h): none applies
  // Delta; momentum is FedAvgM (Hsu et al. 2019), v = mu v + Delta,
  // w += v; adam is FedAdam (Reddi et al. 2021) on Delta / eta_g with
  // step eta_g. The state is checkpointed with the models.
  std::string server_optimizer = "none";  // none | momentum | adam
  double server_momentum = 0.9;         // mu (momentum); beta1 (adam)
  double server_beta2 = 0.99;           // adam
  double server_epsilon = 1e-3;         // adam's tau
  // How the updates are summed (common/fed/aggregate.h). client_order:
  // buffered until the round closes, then folded in client-id order in
  // double (memory grows with the updates: O(C k) a round). fixed_point:
  // each update folded as it arrives into a 128-bit fixed-point
  // accumulator per weight and group, exact integer sums whatever the
  // order, nothing buffered (O(M d) memory); for rounds of thousands of
  // clients. Not with FENS, robust.trim or the norm bounds (they need
  // every update of the round at once).
  std::string reduction = "client_order";
  // Defences against a participant that sends a harmful update or claim
  // (common/fed/robust.h; the bounds are RobustConfig). On by default:
  // honest updates are not touched by them (docs/SECURITY.md has the
  // figures), so a clean run's models equal a run with them off.
  bool robust = true;
  // Secure aggregation (common/secure/, the bounds and sizes in
  // SecureConfig): off | common_support | clear_support. common_support:
  // the coordinator learns only the weighted sum of each model's updates on
  // a public support C_t, never one daemon's. clear_support: the same
  // support, clipping and fixed-point rounding with the inputs in clear
  // (no masks): the baseline a secure run is checked and measured against.
  std::string secure = "off";
};

// aggregation.secure's settings (docs/DESIGN.md, "Secure aggregation").
struct SecureConfig {
  // K, the size of the support C_t, as a fraction of d; 0: K = k, the
  // largest top-k budget of the model's tasks that round.
  double support_fraction = 0;
  // The share of C_t drawn from the round seed; the rest is the top of the
  // public accumulator of past global updates.
  double explore_fraction = 0.25;
  // accumulator | layout (common/fed/common_support.h) | oracle
  // (clear_support only: common/fed/oracle_support.h). layout: trainable
  // tensors of at most whole_max entries always whole (up to K/2), and a
  // share max(layout_explore, 1/t) of the rest drawn.
  std::string support = "accumulator";
  int64_t whole_max = 6000;
  double layout_explore = 0.1;
  // layout: each party appends the counts of its clients' own top-k
  // positions per row and column of the larger tensors; V_{t+1} follows
  // them (common/fed/vote_support.h).
  bool vote = false;
  double accumulator_decay = 0.9;  // A <- decay A + published update
  int64_t threshold = 0;     // t of n parties; 0: floor(2n/3) + 1
  int64_t scale_bits = 24;   // f: values travel as round(x 2^f)
  // 16 | 32: the values' words on the wire; 16 halves them and needs
  // n ceil(c 2^f) < 2^15 (common/fed/config_load.cc refuses the rest).
  int64_t word_bits = 32;
  double clip = 1.0;         // c: each value is clipped to [-c, c]
  int64_t min_parties = 5;   // fewer daemons for a model: refused
  // How long the key, share and unmask stages wait for a party; the
  // masked input waits until the round's deadline.
  double stage_timeout_s = 30;
  // A sum beyond the honest range marks its session corrupt; blame is
  // decided over the last blame_window rounds' sessions, and a daemon it
  // singles out sits out bench_rounds rounds (0: the rest of the run).
  int64_t blame_window = 5;
  int64_t bench_rounds = 0;
  // SecAgg+ (common/secure/collector.h): a session of more than
  // graph_above parties (0: never) masks and shares along a neighbour
  // graph whose degree and t meet the failure and security bounds against
  // these fractions of colluding and dropped parties; graph_degree, when
  // set, fixes the degree instead (t then secure.threshold).
  int64_t graph_above = 200;
  double collude_fraction = 1.0 / 3;
  double dropout_fraction = 1.0 / 3;
  int64_t graph_degree = 0;
  // clear_support only: each party also sends its dense sum and its
  // clients' own top-k union, and rounds.jsonl says how much of the sum's
  // energy, and of that union, the support held
  // (common/secure/support_diagnosis.h).
  bool diagnose = false;
};

// The bounds applied when aggregation.robust is on (common/fed/robust.h).
struct RobustConfig {
  // An update with a coordinate above this in magnitude is refused at its
  // upload (reason `magnitude`); 0: no bound.
  double max_abs = 1e4;
  // Each member update's L2 norm against the median norm of the round's
  // updates (every member's): above refuse_multiple x median it is left
  // out of the aggregate, above clip_multiple x median it is scaled down
  // to that bound; 0 turns either off.
  double clip_multiple = 4;
  double refuse_multiple = 20;
  // An absolute L2 bound every update is scaled down to; 0: none.
  double norm_bound = 0;
  // Coordinate-wise trimming over a member's senders: at each coordinate
  // the floor(trim x n) lowest and highest of the n values (absent ones
  // count as 0) bound the others (winsorising); 0: off, 0.5: the median.
  double trim = 0;
  // A claimed shard size above shard_multiple x the median claim is taken
  // as that bound (sample weights and HASA's scores); 0: as claimed.
  double shard_multiple = 4;
};

struct EvalConfig {
  int64_t every = 1;              // evaluate every this many rounds
  double threshold = 0.8;         // for rounds_to_threshold
  int64_t max_test_samples = 0;   // > 0: evaluate on the first this many
  // 256 keeps a batch's activations in cache: the quick run's evaluation
  // took 15.3 s a round at 1000, 8.8-9.6 s at 256 (docs/PERFORMANCE.md).
  int64_t batch_size = 256;
  std::string precision = "fp32";  // fp32 | bf16, as train.precision
  // Client-level metrics (003 Eq. 5-7): each client holds out this
  // fraction of its shard (common/fed/client_metrics.h has the exact split),
  // never trains on it, and the ensemble is scored on it; rounds.jsonl
  // then carries mean, worst and 10th-percentile client accuracy. 0: off
  // (no split; runs as before). The coordinator computes the figures
  // itself from the seed's partition, a simulation of each client's own
  // evaluation (server/round/client_evaluator.h); refused with partition 'own'.
  double client_holdout = 0;
  // Fed-ensemble's personalised weights (004 Eq. 3-4): client i weighs
  // member k by alpha_ik = softmax_k(-loss_i(w_k) / gamma), loss_i its
  // mean cross-entropy on its own training data. 0: off. Large gamma gives
  // uniform weights, small picks the member with the lowest loss.
  // Reported as weight statistics, and as personalised client-level
  // accuracy when client_holdout > 0.
  double gamma = 0;
};

// HASA-style allocation (003, method: hasa; common/fed/hasa.h has the maths):
// each client trains r_i * M of the M models a round (floor or ceil in
// turn, rotating), r_i from its label histogram's Jensen-Shannon
// divergence to the pooled one (ranked), mapped into [r_min, r_max] and
// scaled-and-projected onto the size-weighted budget B with per-client
// caps u_i = min(r_max, declared capacity / M). Clients send label counts
// (never samples) with their shard-size report; those bytes are booked
// per client on both sides.
struct HasaConfig {
  // hasa | uniform | size | mixed | inverse (003's ablations)
  std::string allocation = "hasa";
  double budget = 0.5;      // B: size-weighted mean share of the M models
  double r_min = 0.2;       // r_min * M >= 1: everyone trains a model a round
  double r_max = 0.8;
  double gamma = 0.5;       // mixed: gamma * size + (1 - gamma) * heterogeneity
  double smoothing = 1.0;   // a, added to every label count (003 Eq. 9-10)
  int64_t passes = 2;       // T scale-and-project passes (2 in 003)
};

// FENS (002, method: fens): one-shot federated ensembles. Every client
// trains once, to train.local_epochs, from the one initial model and
// uploads its model dense; the coordinator keeps the N client models as
// the ensemble and combines their softmax outputs with an aggregator
// trained on a proxy split it holds (docs/FENS.md has the decisions).
struct FensConfig {
  // mean | weighted (per-class sample counts, 002 Eq. 5) | linear (learned
  // per-member, per-class weights over the probabilities, Eq. 5 trained) |
  // nn (002's shallow network: M*C inputs, one hidden layer of
  // `hidden_units` ReLU units, softmax out, Adam).
  std::string aggregator = "nn";
  // This fraction of the training set (a seeded draw) is held back at the
  // coordinator as the proxy set; the clients' partition covers the rest.
  double proxy_fraction = 0.1;
  int64_t hidden_units = 120;      // nn
  int64_t epochs = 300;            // linear, nn: passes over the proxy set
  double lr = 1e-3;                // Adam's step size (002: 5e-5, 300 epochs)
  double lr_decay = 0.999;         // lr *= lr_decay after every epoch
  int64_t batch_size = 64;
};

// Differential privacy (docs/PRIVACY.md): user-level over the whole run.
// A client's updates of a round, to every model it trains, are clipped
// together to L2 norm `clip`; the coordinator adds Gaussian noise of
// standard deviation noise_multiplier x clip x the largest coefficient a
// client carries to each model's fixed-denominator sum, and an RDP
// accountant adds up what each round costs.
struct PrivacyConfig {
  std::string mode = "off";       // off | central | distributed
  double noise_multiplier = 1.0;  // z
  double clip = 1.0;              // S (adaptive_clip: the first round's)
  // The run stops before a round that would take epsilon past this; 0:
  // no stop (epsilon is still reported).
  double target_epsilon = 0;
  double delta = 0;               // 0: 1 / N^1.1
  // Andrew et al. 2021: S follows the clip_quantile of the clients' joint
  // norms, from a noised count of the clients under S.
  bool adaptive_clip = false;
  double clip_quantile = 0.5;     // gamma
  double clip_lr = 0.2;           // eta: S *= exp(-eta (b - gamma))
  double count_noise = 0;         // sigma_b; 0: the expected cohort / 20
  // The noise's generator: 0 draws a fresh key from the operating system
  // each run (the guarantee needs noise nobody can predict); any other
  // value derives it from this, for runs that must repeat exactly.
  uint64_t noise_seed = 0;
};

// How updates reach the models (docs/DESIGN.md, "Buffered asynchronous
// rounds"): synchronous rounds, or FedBuff's buffers (Nguyen et al. 2022),
// where the coordinator keeps tasks in flight and applies each model's
// buffer once it holds buffered.size updates.
struct RoundModeConfig {
  std::string mode = "synchronous";  // synchronous | buffered
};

struct BufferedConfig {
  int64_t concurrency = 0;   // tasks in flight; 0: the cohort's size
  int64_t size = 0;          // updates a model's buffer applies; 0: the cohort
  // s(tau), the weight of an update trained tau applications ago:
  // sqrt: 1/sqrt(1 + tau); poly:A: (1 + tau)^-A; none: 1.
  std::string staleness = "sqrt";
  int64_t max_staleness = 20;  // staler uploads are refused as late
  double server_lr = 1.0;      // eta_g: x += eta_g sum(s w u) / sum(s w)
  // Writes every applied update to <out>/uploads/ beside buffer_log.jsonl,
  // so that `shefl-coordinator --replay` can rebuild the run's models.
  bool record_uploads = false;
};

struct ExperimentConfig {
  std::string name = "experiment";
  // shefl | fedensemble | fedavg | fedprox | hasa | fens: fixes who trains what
  std::string method = "shefl";
  uint64_t seed = 1;
  int64_t rounds = 100;
  std::string out_dir;            // empty: results/<name>-<timestamp>
  double round_deadline_s = 600;
  std::string device = "auto";    // auto | cpu | cuda | cuda:N

  DataConfig data;
  PartitionConfig partition;
  ModelConfig model;
  TrainConfig train;
  CompressionConfig compression;
  ClientsConfig clients;
  ScheduleConfig schedule;
  AggregationConfig aggregation;
  EvalConfig eval;
  FensConfig fens;
  HasaConfig hasa;
  RobustConfig robust;
  SecureConfig secure;
  PrivacyConfig privacy;
  RoundModeConfig round;
  BufferedConfig buffered;
};

// Where each key that was set came from: "file:line" or "--set", so that
// errors found later (cross-key checks) still point at the line.
using ConfigOrigins = std::map<std::string, std::string>;

// The keys as read, before any method preset.
struct ParsedConfig {
  ExperimentConfig config;
  ConfigOrigins origins;
  std::string source;
};

// Parses YAML text, then applies "dotted.key=value" overrides in order
// (values are YAML scalars: `--set rounds=3`, `--set data.dataset=mnist`).
// Checks each key's type and range only; `source` names the file in errors.
// Most callers want LoadConfig (common/fed/config_load.h).
absl::StatusOr<ParsedConfig> ParseConfigKeys(
    const std::string& yaml_text, const std::string& source,
    const std::vector<std::string>& overrides);

// The text of a config file; NotFound names the path.
absl::StatusOr<std::string> ReadConfigText(const std::string& path);

// The value of `key` as a YAML scalar would write it ("" for an unknown
// key), and the reverse: sets `key` from such text, checking type and
// range; errors start with `where`.
std::string ConfigValueText(const ExperimentConfig& config,
                            const std::string& key);
absl::Status SetConfigValue(ExperimentConfig* config, const std::string& key,
                            const std::string& value, const std::string& where);

// Every dotted key the loader knows, in file order (for docs and errors).
std::vector<std::string> ConfigKeys();

// Effective HPC:LPC resource ratio r (resource_ratio, or M when unset).
double ResourceRatio(const ExperimentConfig& config);

// The resolved config, every key written, as YAML (results/config.yaml).
std::string ConfigToYaml(const ExperimentConfig& config);

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_CONFIG_H_
