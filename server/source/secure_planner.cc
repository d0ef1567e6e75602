#include "server/source/secure_planner.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/fed/aggregate.h"
#include "common/fed/common_support.h"
#include "common/fed/privacy_plan.h"
#include "common/secure/public_hashes.h"
#include "common/sparse/index_set_codec.h"

namespace shefl {

namespace {

// privacy.mode distributed: each client's L2 clip, S / sqrt(the models it
// trains this round), so that its round is within S however many
// sessions it is in; the parties' noise for the session's t, which is
// fixed here (never a SecAgg+ graph's) so that the noise and the
// threshold the collector enforces are the same t.
void PlanNoise(const ExperimentConfig& c, const RoundPlan& plan,
               SecureModelPlan* p) {
  if (c.privacy.mode != "distributed") return;
  std::map<int64_t, size_t> models;
  for (const ClientTask& t : plan.tasks) models[t.client_id] += t.models.size();
  for (SecurePartyPlan& party : p->parties)
    for (const auto& [client, w] : party.weights)
      party.l2_clips[client] =
          c.privacy.clip /
          std::sqrt(static_cast<double>(std::max<size_t>(models[client], 1)));
  const int64_t t = PlannedThreshold(c, static_cast<int64_t>(p->parties.size()));
  p->settings.threshold = static_cast<uint32_t>(t);
  p->settings.graph_above = 0;
  p->encoding.noise_mu = PartyNoiseVariance(c, p->encoding.support.size(), t);
  p->encoding.noise_seed = c.privacy.noise_seed;
}

}  // namespace

SecurePlanner::SecurePlanner(const ExperimentConfig& config, uint64_t dim,
                             std::string run_id, std::vector<TensorSpan> small,
                             std::vector<TensorGrid> grids)
    : config_(config),
      dim_(dim),
      run_id_(std::move(run_id)),
      small_(std::move(small)),
      grids_(config.secure.vote ? std::move(grids) : std::vector<TensorGrid>{}),
      accumulators_(config.model.num_models, std::vector<float>(dim, 0.0f)),
      votes_(config.model.num_models) {}

CoordinatorState::SecureSessions SecurePlanner::Plan(
    const RoundPlan& plan, int64_t round, const CoordinatorState& state,
    SecureSession::Clock::time_point deadline,
    const SecureSession::Send& send) {
  CoordinatorState::SecureSessions sessions;
  const auto timeout = std::chrono::milliseconds(
      static_cast<int64_t>(config_.secure.stage_timeout_s * 1000));
  for (int64_t m = 0; m < config_.model.num_models; ++m) {
    auto model_plan = PlanModel(plan, round, m, state);
    if (!model_plan) continue;
    sessions[m] = std::make_shared<SecureSession>(*std::move(model_plan),
                                                  timeout, deadline, send);
  }
  return sessions;
}

std::optional<SecureModelPlan> SecurePlanner::PlanModel(
    const RoundPlan& plan, int64_t round, int64_t model,
    const CoordinatorState& state) {
  SecureModelPlan p;
  p.dim = dim_;
  p.masked = config_.aggregation.secure == "common_support";
  Weigh(plan, model, state, &p);
  if (p.parties.empty()) return std::nullopt;
  if (static_cast<int64_t>(p.parties.size()) < config_.secure.min_parties) {
    LogLine("coordinator",
            absl::StrCat("round ", round, " model ", model, ": ",
                         p.parties.size(), " daemons train it, fewer than "
                         "secure.min_parties = ", config_.secure.min_parties,
                         ": not aggregated this round"));
    return std::nullopt;
  }
  uint64_t k = 0;
  for (const ClientTask& t : plan.tasks)
    for (size_t i = 0; i < t.models.size(); ++i)
      if (t.models[i] == model) k = std::max<uint64_t>(k, t.k[i]);
  if (config_.secure.support_fraction > 0)
    k = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(
                                  config_.secure.support_fraction * dim_)));
  SecureEncoding& e = p.encoding;
  const SupportChoice choice{k, config_.secure.explore_fraction, config_.seed,
                             round, static_cast<uint32_t>(model)};
  const SupportVote vote{grids_, votes_[model]};
  if (config_.secure.support == "oracle") {
    e.support.resize(dim_);
    std::iota(e.support.begin(), e.support.end(), 0u);
    p.select_k = k;
  } else if (config_.secure.support == "layout") {
    e.support = LayoutSupport(accumulators_[model], small_,
                              config_.secure.layout_explore, choice, &vote);
  } else {
    e.support = CommonSupport(accumulators_[model], choice);
  }
  e.vote = grids_;
  e.clip = config_.secure.clip;
  e.word_bits = static_cast<int>(config_.secure.word_bits);
  e.diagnose = config_.secure.diagnose;
  e.scale_bits = static_cast<int>(config_.secure.scale_bits);
  e.seed = config_.seed;
  e.round = round;
  e.model = static_cast<uint32_t>(model);
  auto bytes = EncodeIndexSet(dim_, e.support);
  auto support_hash = SupportHash(e.support);
  auto model_hash = ModelHash(*state.store->Get(model));
  if (!bytes.ok() || !support_hash.ok() || !model_hash.ok()) {
    LogLine("coordinator", absl::StrCat("round ", round, " model ", model,
                                        ": secure setup failed"));
    return std::nullopt;
  }
  p.support_bytes = *std::move(bytes);
  SessionParams& sp = p.settings.params;
  sp.run_id = run_id_;
  sp.round = static_cast<uint64_t>(round);
  sp.model = static_cast<uint32_t>(model);
  sp.scale_bits = static_cast<uint32_t>(e.scale_bits);
  sp.clip = e.clip;
  sp.support_hash = *support_hash;
  sp.model_hash = *model_hash;
  p.settings.threshold = static_cast<uint32_t>(config_.secure.threshold);
  p.settings.min_parties = static_cast<uint32_t>(config_.secure.min_parties);
  p.settings.words = e.words();
  p.settings.graph_above = static_cast<uint32_t>(config_.secure.graph_above);
  p.settings.collude_fraction = config_.secure.collude_fraction;
  p.settings.dropout_fraction = config_.secure.dropout_fraction;
  p.settings.graph_degree = static_cast<uint32_t>(config_.secure.graph_degree);
  PlanNoise(config_, plan, &p);
  return p;
}

namespace {

// The k client `client`'s task has for `model`: its own top-k.
uint64_t OwnK(const RoundPlan& plan, int64_t client, int64_t model) {
  for (const ClientTask& t : plan.tasks)
    if (t.client_id == client)
      for (size_t i = 0; i < t.models.size(); ++i)
        if (t.models[i] == model) return t.k[i];
  return 0;
}

}  // namespace

// The rule's coefficients for the planned tasks (eta left to the round's
// step), each over the largest: public weights in (0, 1]. A task whose
// coefficient is 0 adds nothing and takes no part.
void SecurePlanner::Weigh(const RoundPlan& plan, int64_t model,
                          const CoordinatorState& state,
                          SecureModelPlan* out) const {
  AggregationConfig rule = config_.aggregation;
  rule.server_lr = 1;
  rule.reduction = "client_order";
  ModelAggregator planned(rule,
                          {config_.model.num_models, plan.num_hpc,
                           plan.num_lpc, plan.hpc_subsets},
                          1);
  for (const ClientTask& t : plan.tasks)
    if (std::count(t.models.begin(), t.models.end(), model))
      planned
          .Add({t.client_id, t.tier,
                std::max(1.0, state.reports.ShardSize(t.client_id)),
                SparseDelta{1, {}, {}}})
          .IgnoreError();
  const std::map<int64_t, double> coef = planned.CoefficientsByClient();
  double largest = 0, sum = 0;
  for (const auto& [client, c] : coef) {
    largest = std::max(largest, c);
    sum += c;
  }
  out->scale = sum;
  std::map<std::string, SecurePartyPlan> by_daemon;
  for (const auto& [client, c] : coef) {
    if (!(c > 0)) continue;
    auto owner = state.registry.OwnerOf(client);
    if (!owner) continue;
    SecurePartyPlan& party = by_daemon[owner->session_id];
    if (party.weights.empty()) party.id = static_cast<uint32_t>(client);
    party.weights[client] = c / largest;
    if (!grids_.empty() || config_.secure.diagnose)
      party.own_k[client] = OwnK(plan, client, model);
  }
  for (auto& [daemon, party] : by_daemon) out->parties.push_back(party);
  std::sort(out->parties.begin(), out->parties.end(),
            [](const SecurePartyPlan& a, const SecurePartyPlan& b) {
              return a.id < b.id;
            });
}

absl::Status SecurePlanner::SetAccumulators(std::vector<std::vector<float>> a) {
  if (a.size() != accumulators_.size())
    return absl::InvalidArgumentError(absl::StrCat(
        "secure support: ", a.size(), " accumulators saved for ",
        accumulators_.size(), " models"));
  for (const auto& v : a)
    if (v.size() != dim_)
      return absl::InvalidArgumentError(absl::StrCat(
          "secure support: an accumulator of ", v.size(),
          " entries saved for a model of ", dim_));
  accumulators_ = std::move(a);
  return absl::OkStatus();
}

void SecurePlanner::Voted(int64_t model, std::vector<uint32_t> counts) {
  if (counts.size() == MarginalWords(grids_)) votes_[model] = std::move(counts);
}

absl::Status SecurePlanner::SetVotes(std::vector<std::vector<uint32_t>> votes) {
  if (votes.size() != votes_.size())
    return absl::InvalidArgumentError(absl::StrCat(
        "secure support: ", votes.size(), " votes saved for ", votes_.size(),
        " models"));
  for (const auto& v : votes)
    if (!v.empty() && v.size() != MarginalWords(grids_))
      return absl::InvalidArgumentError(absl::StrCat(
          "secure support: a vote of ", v.size(), " counts saved for grids of ",
          MarginalWords(grids_)));
  votes_ = std::move(votes);
  return absl::OkStatus();
}

void SecurePlanner::Published(int64_t model, const std::vector<float>& before,
                              const std::vector<float>& after) {
  std::vector<float> update(after.size());
  for (size_t i = 0; i < after.size(); ++i) update[i] = after[i] - before[i];
  AccumulateUpdate(update, static_cast<float>(config_.secure.accumulator_decay),
                   &accumulators_[model]);
}

}  // namespace shefl
