#include "server/round/eval_report.h"

namespace shefl {

void AddEvaluationDetails(const EvalResult& r, nlohmann::json* line) {
  nlohmann::json& l = *line;
  l["predictive_variance"] = r.predictive_variance;
  l["mutual_information"] = r.mutual_information;
  l["entropy_correct"] = r.entropy_correct;
  l["entropy_wrong"] = r.entropy_wrong;
  l["predictive_variance_correct"] = r.predictive_variance_correct;
  l["predictive_variance_wrong"] = r.predictive_variance_wrong;
  l["eval_samples"] = r.samples;
  l["eval_correct"] = r.num_correct;
  const ClientLevelResult& c = r.client_level;
  if (c.evaluated) {
    l["client_mean_accuracy"] = c.uniform.mean;
    l["client_worst_accuracy"] = c.uniform.worst;
    l["client_p10_accuracy"] = c.uniform.p10;
    l["clients_evaluated"] = c.uniform.clients;
    l["client_eval_samples"] = c.samples;
  }
  if (c.personalised) {
    l["personal_weight_entropy"] = c.weight_entropy;
    l["personal_weight_max"] = c.weight_max;
    if (c.evaluated) {
      l["personal_client_mean_accuracy"] = c.personal.mean;
      l["personal_client_worst_accuracy"] = c.personal.worst;
      l["personal_client_p10_accuracy"] = c.personal.p10;
    }
  }
}

void PublishEvaluationDetails(const EvalResult& r, CoordinatorMetrics& m) {
  m.SetUncertainty(r.mean_entropy, r.entropy_correct, r.entropy_wrong,
                   r.predictive_variance, r.predictive_variance_correct,
                   r.predictive_variance_wrong, r.mutual_information);
  const ClientLevelResult& c = r.client_level;
  if (c.evaluated) m.SetClientLevel("uniform", c.uniform);
  if (c.personalised) {
    m.SetPersonalWeightEntropy(c.weight_entropy);
    if (c.evaluated) m.SetClientLevel("personal", c.personal);
  }
}

}  // namespace shefl
