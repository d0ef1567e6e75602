#include "server/round/evaluator.h"

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/data/data.h"
#include "common/learn/device.h"
#include "common/learn/flat_state.h"
#include "common/learn/precision.h"

namespace shefl {

absl::StatusOr<std::unique_ptr<Evaluator>> Evaluator::Create(
    const ExperimentConfig& config, const EvalThreads& par) {
  if (par.threads < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("--eval-threads must be >= 1, got ", par.threads));
  if (par.nice < 0 || par.nice > 19)
    return absl::InvalidArgumentError(
        absl::StrCat("--eval-nice must be 0-19, got ", par.nice));
  auto e = std::unique_ptr<Evaluator>(new Evaluator());
  e->config_ = config;
  e->par_ = par;
  SHEFL_ASSIGN_OR_RETURN(
      e->test_, LoadDataset(config.data, /*train=*/false, config.seed));
  SHEFL_ASSIGN_OR_RETURN(e->shape_, ShapeOf(e->test_, config.data.text_vocab));
  for (int64_t m = 0; m < config.model.num_models; ++m) {
    SHEFL_ASSIGN_OR_RETURN(auto net, MakeModel(config.model.name, e->shape_));
    e->nets_.push_back(net);
  }
  e->dim_ = FlatSize(*e->nets_[0]);
  // Evaluation runs on the config's device (CUDA when present under
  // `auto`): on the CPU it is most of the coordinator's time per round.
  SHEFL_ASSIGN_OR_RETURN(e->device_, ResolveDevice(config.device));
  SHEFL_RETURN_IF_ERROR(
      CheckPrecision("eval.precision", config.eval.precision, e->device_));
  if (ClientEvaluator::Wanted(config)) {
    SHEFL_ASSIGN_OR_RETURN(e->clients_, ClientEvaluator::Create(config));
  }
  return e;
}

absl::StatusOr<std::vector<std::vector<float>>> Evaluator::InitialModels()
    const {
  std::vector<std::vector<float>> out;
  for (int64_t m = 0; m < config_.model.num_models; ++m) {
    SHEFL_ASSIGN_OR_RETURN(
        auto net,
        MakeInitialisedModel(config_.model.name, shape_, config_.seed, m));
    out.push_back(FlattenToVector(*net));
  }
  return out;
}

absl::StatusOr<EvalResult> Evaluator::Evaluate(
    const std::vector<ModelSnapshot>& models) {
  for (size_t m = 0; m < models.size(); ++m)
    SHEFL_RETURN_IF_ERROR(Unflatten(*models[m], *nets_[m]));
  // eval.precision: bf16 autocast on this thread (checked at Create).
  AutocastScope autocast(config_.eval.precision, device_);
  auto r = EvaluateEnsemble(nets_, test_, config_.eval.batch_size,
                            config_.eval.max_test_samples, device_, {}, par_);
  if (!r.ok() || clients_ == nullptr) return r;
  SHEFL_ASSIGN_OR_RETURN(
      r->client_level,
      clients_->Evaluate(nets_, config_.eval.batch_size, device_));
  return r;
}

}  // namespace shefl
