// CoordinatorMetrics::Restore: a resumed coordinator's gauges from the
// round lines its results folder holds (field names: docs/RESULTS.md,
// server/round/eval_report.cc, server/round/capacity_plan.cc). Counters are not
// restored: they restart at 0, which Prometheus's rate() and increase()
// read as a counter reset.
#include <algorithm>

#include "server/run/coordinator_metrics.h"
#include "server/run/rounds_log.h"

namespace shefl {

namespace {

// `key` of `j` when it is a number (a NaN loss is written as null).
bool Get(const nlohmann::json& j, const char* key, double* out) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return true;
}

double Or0(const nlohmann::json& j, const char* key) {
  double v = 0;
  Get(j, key, &v);
  return v;
}

}  // namespace

void CoordinatorMetrics::RestoreFromRounds(const std::string& rounds_jsonl) {
  const RoundsLog::Ends ends = RoundsLog::ReadEnds(rounds_jsonl);
  Restore(ends.last, ends.evaluated);
}

void CoordinatorMetrics::Restore(const nlohmann::json& last_line,
                                 const nlohmann::json& e) {
  double round = 0;
  if (!Get(last_line, "round", &round) || round < 1) return;
  SetRound(static_cast<int64_t>(round));
  double v = 0;
  if (Get(last_line, "max_abs_weight", &v)) SetMaxAbsWeight(v);
  if (auto s = last_line.find("stallers");
      s != last_line.end() && s->is_object() && Get(*s, "sitting_out", &v))
    clients_sitting_out_->Set(v);
  // Capacity levels and HASA, when the run has them in play.
  if (auto m = last_line.find("models_by_client");
      m != last_line.end() && m->is_object() && !m->empty()) {
    double sum = 0, least = 0, most = 0;
    bool first = true;
    for (const auto& [client, n] : m->items()) {
      const double x = n.is_number() ? n.get<double>() : 0.0;
      sum += x;
      least = first ? x : std::min(least, x);
      most = std::max(most, x);
      first = false;
    }
    SetModelsPerClient(sum / static_cast<double>(m->size()), least, most);
  }
  if (auto h = last_line.find("hasa"); h != last_line.end() && h->is_object())
    SetHasa(Or0(*h, "budget"), Or0(*h, "budget_realised"),
            static_cast<int64_t>(Or0(*h, "clients_scored")),
            static_cast<uint64_t>(Or0(*h, "label_count_bytes")));
  // The last evaluation's figures.
  if (!e.is_object()) return;
  if (Get(e, "ensemble_accuracy", &v)) SetEnsembleAccuracy(v);
  if (Get(e, "ensemble_loss", &v)) SetEnsembleLoss(v);
  if (Get(e, "ece", &v)) SetEnsembleEce(v);
  if (auto m = e.find("model_accuracy"); m != e.end() && m->is_array())
    for (size_t i = 0; i < m->size(); ++i)
      if ((*m)[i].is_number())
        SetModelAccuracy(static_cast<int64_t>(i), (*m)[i].get<double>());
  if (e.contains("mutual_information"))
    SetUncertainty(Or0(e, "mean_entropy"), Or0(e, "entropy_correct"),
                   Or0(e, "entropy_wrong"), Or0(e, "predictive_variance"),
                   Or0(e, "predictive_variance_correct"),
                   Or0(e, "predictive_variance_wrong"),
                   Or0(e, "mutual_information"));
  if (e.contains("client_mean_accuracy"))
    SetClientLevel("uniform", {0, Or0(e, "client_mean_accuracy"),
                               Or0(e, "client_worst_accuracy"),
                               Or0(e, "client_p10_accuracy")});
  if (e.contains("personal_client_mean_accuracy"))
    SetClientLevel("personal", {0, Or0(e, "personal_client_mean_accuracy"),
                                Or0(e, "personal_client_worst_accuracy"),
                                Or0(e, "personal_client_p10_accuracy")});
  if (Get(e, "personal_weight_entropy", &v)) SetPersonalWeightEntropy(v);
}

}  // namespace shefl
