#include "server/fens_round.h"

namespace shefl {

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
