// FENS at the coordinator (the FENS paper): the client models uploaded in the one
// round are the ensemble's members; the aggregator chosen by
// fens.aggregator is fitted on the proxy split (common/fed/fens_split.h) and
// the ensemble is evaluated on the test set, beside the plain mean.
// Thread-compatible: the round loop, then the record thread, one after the
// other.
#ifndef SHEFL_SERVER_ROUND_FENS_ENSEMBLE_H_
#define SHEFL_SERVER_ROUND_FENS_ENSEMBLE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/data/dataset.h"
#include "common/fed/aggregate.h"
#include "common/learn/evaluate.h"
#include "common/learn/models.h"
#include "server/round/client_evaluator.h"
#include "server/run/model_store.h"

namespace shefl {

struct FensResult {
  // The aggregator's ensemble: accuracy, NLL, ECE, entropy of its output;
  // member_accuracy / member_nll one per member (client order), and
  // mean_member_variance taken from the plain mean's members.
  EvalResult ensemble;
  // ensemble.client_level: with eval.client_holdout, the aggregated
  // ensemble on every client's held-out split (the HASA paper, Eq. 5-7).
  EvalResult mean;  // the plain mean of the same members
  std::string aggregator;
  int64_t aggregator_params = 0;  // q, fp32 numbers
  int64_t proxy_samples = 0;
  double fit_seconds = 0;  // member outputs on the proxy set and the fit
};

// The members of a FENS round: member i is global + the update of
// clients[i] (ascending client id). InvalidArgument for a bad delta.
absl::StatusOr<std::vector<ModelSnapshot>> FensMembers(
    const std::vector<float>& global, const std::vector<ReceivedUpdate>& updates,
    std::vector<int64_t>* clients);

class FensEnsemble {
 public:
  // Loads the training set (for the proxy rows and every client's label
  // counts) and the test set named by the config.
  static absl::StatusOr<std::unique_ptr<FensEnsemble>> Create(
      const ExperimentConfig& config, c10::Device device);

  // members[i] is client clients[i]'s model.
  absl::StatusOr<FensResult> Evaluate(const std::vector<ModelSnapshot>& members,
                                      const std::vector<int64_t>& clients);

  int64_t proxy_samples() const { return proxy_.size(); }

 private:
  // Member softmax outputs [M, N, C] on `data` (CPU, fp32).
  absl::StatusOr<at::Tensor> MemberProbs(
      const std::vector<ModelSnapshot>& members, const Dataset& data);

  ExperimentConfig config_;
  Dataset proxy_, test_;
  std::vector<std::vector<int64_t>> label_counts_;  // [client][class]
  std::shared_ptr<Net> net_;
  c10::Device device_ = c10::Device(c10::kCPU);
  // eval.client_holdout > 0: every client's held-out split, scored with
  // the aggregated ensemble (ensemble.client_level); null otherwise.
  std::unique_ptr<ClientEvaluator> clients_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_FENS_ENSEMBLE_H_
