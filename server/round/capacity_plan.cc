#include "server/round/capacity_plan.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/log.h"
#include "common/fed/methods/registry.h"

namespace shefl {

CapacityPlan::CapacityPlan(const ExperimentConfig& config,
                           const ClientReports& reports)
    : config_(config), reports_(reports) {}

void CapacityPlan::Reallocate() {
  const auto counts = reports_.LabelCounts();
  if (counts.size() <= scored_) return;
  const auto sizes = reports_.ShardSizes();
  std::vector<int64_t> ids;
  std::vector<double> n, declared;
  std::vector<std::vector<uint64_t>> hist;
  for (const auto& [id, c] : counts) {
    auto size = sizes.find(id);
    if (size == sizes.end()) continue;
    ids.push_back(id);
    n.push_back(static_cast<double>(size->second));
    hist.push_back(c);
    declared.push_back(reports_.DeclaredCapacity(id));
  }
  if (ids.empty()) return;
  auto a = AllocateHasa(config_.hasa, config_.model.num_models, n, hist,
                        declared);
  if (!a.ok()) {
    LogLine("coordinator", absl::StrCat("HASA: ", a.status().message()));
    return;
  }
  scored_ = counts.size();
  ids_ = std::move(ids);
  allocation_ = std::move(*a);
  capacity_.clear();
  const double M = static_cast<double>(config_.model.num_models);
  for (size_t i = 0; i < ids_.size(); ++i)
    capacity_[ids_[i]] = allocation_.width[i] * M;
  fresh_ = true;
  LogLine("coordinator",
          absl::StrFormat("HASA (%s): %d clients scored, size-weighted budget "
                          "%.4f (B = %.4f), widths in [%.3f, %.3f]",
                          config_.hasa.allocation, ids_.size(),
                          allocation_.budget, config_.hasa.budget,
                          *std::min_element(allocation_.width.begin(),
                                            allocation_.width.end()),
                          *std::max_element(allocation_.width.begin(),
                                            allocation_.width.end())));
}

CapacityOf CapacityPlan::ForRound() {
  if (TraitsOf(config_.method).assignment == Assignment::kHasa) {
    Reallocate();
    return [caps = capacity_](int64_t id) {
      auto it = caps.find(id);
      return it == caps.end() ? 0.0 : it->second;
    };
  }
  const ClientReports* reports = &reports_;
  return [reports](int64_t id) {
    return static_cast<double>(reports->DeclaredCapacity(id));
  };
}

void CapacityPlan::AddFields(const RoundPlan& plan, nlohmann::json* line,
                             CoordinatorMetrics& metrics) {
  const bool hasa = TraitsOf(config_.method).assignment == Assignment::kHasa;
  bool in_play = hasa || !config_.clients.hpc_capacity.empty();
  for (const ClientTask& t : plan.tasks)
    in_play |= reports_.DeclaredCapacity(t.client_id) > 0;
  if (!in_play) return;
  nlohmann::json models = nlohmann::json::object();
  double sum = 0, least = 0, most = 0;
  for (size_t i = 0; i < plan.tasks.size(); ++i) {
    const ClientTask& t = plan.tasks[i];
    const double m = static_cast<double>(t.models.size());
    models[std::to_string(t.client_id)] = t.models.size();
    sum += m;
    least = i == 0 ? m : std::min(least, m);
    most = std::max(most, m);
  }
  (*line)["models_by_client"] = models;
  if (!plan.tasks.empty())
    metrics.SetModelsPerClient(sum / static_cast<double>(plan.tasks.size()),
                               least, most);
  if (!hasa) return;
  uint64_t label_bytes = 0;
  for (const auto& [id, b] : reports_.LabelBytes()) label_bytes += b;
  metrics.SetHasa(config_.hasa.budget, allocation_.budget,
                  static_cast<int64_t>(ids_.size()), label_bytes);
  nlohmann::json h = {{"allocation", config_.hasa.allocation},
                      {"budget", config_.hasa.budget},
                      {"budget_realised", allocation_.budget},
                      {"clients_scored", ids_.size()},
                      {"label_count_bytes", label_bytes}};
  if (fresh_) {
    nlohmann::json clients = nlohmann::json::object();
    const double M = static_cast<double>(config_.model.num_models);
    for (size_t i = 0; i < ids_.size(); ++i)
      clients[std::to_string(ids_[i])] = {
          {"score", allocation_.score[i]},
          {"normalised", allocation_.normalised[i]},
          {"cap", allocation_.cap[i]},
          {"width", allocation_.width[i]},
          {"capacity", allocation_.width[i] * M}};
    h["clients"] = clients;
    nlohmann::json bytes = nlohmann::json::object();
    for (const auto& [id, b] : reports_.LabelBytes())
      bytes[std::to_string(id)] = b;
    h["label_count_bytes_by_client"] = bytes;
    fresh_ = false;
  }
  (*line)["hasa"] = h;
}

}  // namespace shefl
