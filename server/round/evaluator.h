// The coordinator's view of the models as networks: it builds the initial
// global models from the seed and evaluates the ensemble on its test set.
// Thread-compatible: one evaluation at a time (the record thread).
#ifndef SHEFL_SERVER_ROUND_EVALUATOR_H_
#define SHEFL_SERVER_ROUND_EVALUATOR_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/data/dataset.h"
#include "common/learn/evaluate.h"
#include "common/learn/flat_state.h"
#include "common/learn/models.h"
#include "server/round/client_evaluator.h"
#include "server/run/model_store.h"

namespace shefl {

class Evaluator {
 public:
  // Loads the test split named by config.data and builds M networks; the
  // ensemble's evaluation runs its batches as `par` says (CPU only).
  static absl::StatusOr<std::unique_ptr<Evaluator>> Create(
      const ExperimentConfig& config, const EvalThreads& par = {});

  // The M initial flat models: member m seeded by (seed, model-init, m).
  absl::StatusOr<std::vector<std::vector<float>>> InitialModels() const;
  int64_t dim() const { return dim_; }
  // The model's flat layout (common/learn/flat_state.h).
  std::vector<FlatEntry> layout() const { return FlatLayout(*nets_[0]); }

  // The ensemble on the test split; with eval.client_holdout or eval.gamma
  // also the client-level figures (server/round/client_evaluator.h).
  absl::StatusOr<EvalResult> Evaluate(const std::vector<ModelSnapshot>& models);

 private:
  ExperimentConfig config_;
  Dataset test_;
  ModelShape shape_;
  std::vector<std::shared_ptr<Net>> nets_;
  int64_t dim_ = 0;
  std::unique_ptr<ClientEvaluator> clients_;  // null unless asked for
  c10::Device device_ = c10::Device(c10::kCPU);
  EvalThreads par_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_EVALUATOR_H_
