// What an evaluation adds to a round's line and to the metrics beyond the
// original fields (ensemble_accuracy ... member_variance, which
// Coordinator::AddEvaluation writes): the Fed-ensemble paper's uncertainty figures, and the
// client-level and personalised figures when the config asks for them.
// Field and metric names are listed in docs/RUNNING.md ("Results",
// "Metrics").
#ifndef SHEFL_SERVER_ROUND_EVAL_REPORT_H_
#define SHEFL_SERVER_ROUND_EVAL_REPORT_H_

#include <nlohmann/json.hpp>

#include "common/learn/evaluate.h"
#include "server/run/coordinator_metrics.h"

namespace shefl {

// Adds the uncertainty fields always, and the client_* / personal_* fields
// only when r.client_level says they were computed (existing fields are
// never renamed or removed).
void AddEvaluationDetails(const EvalResult& r, nlohmann::json* line);

// Sets the matching gauges.
void PublishEvaluationDetails(const EvalResult& r, CoordinatorMetrics& m);

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_EVAL_REPORT_H_
