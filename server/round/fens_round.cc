#include "server/round/fens_round.h"

#include "absl/strings/str_format.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/learn/device.h"

namespace shefl {

absl::StatusOr<std::unique_ptr<FensRound>> FensRound::Create(
    const ExperimentConfig& config) {
  SHEFL_ASSIGN_OR_RETURN(auto device, ResolveDevice(config.device));
  SHEFL_ASSIGN_OR_RETURN(auto ensemble, FensEnsemble::Create(config, device));
  auto kind = std::unique_ptr<FensRound>(new FensRound(config));
  kind->ensemble_ = std::move(ensemble);
  return kind;
}

absl::Status FensRound::Bind(const RoundContext& context) {
  ctx_ = context;
  return absl::OkStatus();
}

RoundPlan FensRound::Plan(int64_t, const Availability& available) {
  return FensPlan(config_, ctx_.scheduler->k_lpc(), available);
}

absl::StatusOr<ClosedRound> FensRound::Close(
    std::vector<ModelAggregator>& aggs) {
  if (aggs.empty() || aggs[0].num_updates() == 0)
    return absl::FailedPreconditionError(
        "FENS: no client model arrived in the round; nothing to ensemble");
  std::vector<int64_t> clients;
  SHEFL_ASSIGN_OR_RETURN(
      auto members,
      FensMembers(*ctx_.state->store->Get(0), aggs[0].updates(), &clients));
  members_ = std::move(members);
  // The members are the round's models: evaluated, and checkpointed (so a
  // resumed run's model_sha256 is theirs too).
  ClosedRound closed;
  closed.models = members_;
  closed.versions.assign(members_.size(), 1);
  closed.fields["models_not_published"] = 0;
  closed.fields["max_abs_weight"] = 0.0;
  const uint64_t dim = ctx_.state->store->dim();
  closed.evaluate =
      [cfg = config_, dim, ensemble = ensemble_, models = members_,
       clients](nlohmann::json* line) -> absl::StatusOr<EvalResult> {
    SHEFL_ASSIGN_OR_RETURN(auto fr, ensemble->Evaluate(models, clients));
    AddFensFields(cfg, dim, fr, clients, line);
    LogLine("coordinator",
            absl::StrFormat("FENS: %d members, %s aggregator (%d parameters, "
                            "fitted on %d proxy samples in %.1f s): accuracy "
                            "%.4f, plain mean %.4f",
                            clients.size(), fr.aggregator,
                            fr.aggregator_params, fr.proxy_samples,
                            fr.fit_seconds, fr.ensemble.ensemble_accuracy,
                            fr.mean.ensemble_accuracy));
    return fr.ensemble;
  };
  return closed;
}

void FensRound::AddSummary(const nlohmann::json& last_line,
                           nlohmann::json* summary) const {
  // The members stand in model_sha256 for the M globals.
  std::vector<std::string> digests;
  for (const ModelSnapshot& m : members_)
    digests.push_back(Sha256Hex(m->data(), m->size() * sizeof(float)));
  (*summary)["model_sha256"] =
      members_.empty() ? ctx_.state->store->Digests() : digests;
  AddFensSummary(last_line, summary);
}

RoundPlan FensPlan(const ExperimentConfig& config, int64_t k,
                   const Availability& available) {
  RoundPlan plan;
  plan.round = 0;
  for (int64_t id = 0; id < config.clients.num_clients; ++id) {
    if (available && !available(id)) continue;
    ClientTask task{id, ClientTier(config.clients, id), {0}, {k}};
    ++(task.tier == Tier::kHpc ? plan.num_hpc : plan.num_lpc);
    plan.tasks.push_back(std::move(task));
  }
  return plan;
}

void AddFensFields(const ExperimentConfig& config, uint64_t dim,
                   const FensResult& r, const std::vector<int64_t>& clients,
                   nlohmann::json* line) {
  const uint64_t q = r.aggregator_params;
  const uint64_t n = config.clients.num_clients;
  const uint64_t members = clients.size();
  (*line)["aggregator_params"] = q;
  (*line)["aggregator_bytes"] = 4 * q;
  (*line)["aggregator_bytes_down"] = n * 4 * q;
  (*line)["deployment_bytes_down"] = n * (members * 4 * dim + 4 * q);
  (*line)["fens"] = {{"aggregator", r.aggregator},
                     {"members", members},
                     {"member_clients", clients},
                     {"proxy_samples", r.proxy_samples},
                     {"aggregator_accuracy", r.ensemble.ensemble_accuracy},
                     {"aggregator_loss", r.ensemble.ensemble_nll},
                     {"mean_accuracy", r.mean.ensemble_accuracy},
                     {"mean_loss", r.mean.ensemble_nll},
                     {"fit_seconds", r.fit_seconds}};
}

void AddFensSummary(const nlohmann::json& line, nlohmann::json* summary) {
  if (auto f = line.find("fens"); f != line.end()) (*summary)["fens"] = *f;
  for (const char* key : {"aggregator_bytes_down", "deployment_bytes_down"})
    if (auto v = line.find(key); v != line.end())
      (*summary)[std::string("total_") + key] = *v;
}

}  // namespace shefl
