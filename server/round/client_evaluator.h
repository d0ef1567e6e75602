// Client-level evaluation on the coordinator (the HASA paper, Eq. 5-7) and Fed-
// ensemble's personalised weights (the Fed-ensemble paper, Eq. 3-4), as a simulation of what
// each client would compute on its own data.
//
// Why on the coordinator: the partition (and the held-out split of
// common/fed/client_metrics.h) is a pure function of the seed, so the
// coordinator, which can load the same training split, rebuilds every
// client's shard exactly as its daemon does (docs/DESIGN.md, "Data and models"). No
// sample, index list or loss crosses the wire and the protocol is
// unchanged; the daemons still never train on the held-out part. The cost
// is one forward pass of the M members over the training set per
// evaluated round, paid only when eval.client_holdout or eval.gamma is set.
// With partition.scheme 'own' the coordinator cannot know a shard, and
// the config loader refuses both keys.
//
// Per client i with training part T_i and held-out part V_i:
//   loss_i(w_k) = mean_{j in T_i} -log p_k(y_j|x_j)         (eval.gamma > 0)
//   alpha_i     = softmax_k(-loss_i(w_k) / gamma)
//   acc_i       = accuracy on V_i of the uniform ensemble, and of the
//                 alpha_i-weighted ensemble when gamma > 0
// summarised over the clients with a non-empty V_i (mean, worst, p10).
// Thread-compatible: the record thread alone calls it.
#ifndef SHEFL_SERVER_ROUND_CLIENT_EVALUATOR_H_
#define SHEFL_SERVER_ROUND_CLIENT_EVALUATOR_H_

#include <c10/core/Device.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/data/dataset.h"
#include "common/fed/client_metrics.h"
#include "common/learn/evaluate.h"
#include "common/learn/models.h"

namespace shefl {

class ClientEvaluator {
 public:
  // True when the config asks for client-level figures or personal weights.
  static bool Wanted(const ExperimentConfig& config);

  // Loads the training split and computes every client's split.
  static absl::StatusOr<std::unique_ptr<ClientEvaluator>> Create(
      const ExperimentConfig& config);

  // Runs `nets` (loaded with the round's models) over the clients' data.
  absl::StatusOr<ClientLevelResult> Evaluate(
      const std::vector<std::shared_ptr<Net>>& nets, int64_t batch_size,
      c10::Device device) const;

  const ClientSplit& split(int64_t client) const { return splits_[client]; }
  const Dataset& train() const { return train_; }

  // Every client's held-out indices into train(), client after client in
  // ascending id: the rows ScoreHeldOut expects.
  std::vector<int64_t> AllHeldOut() const;

  // The client-level figures (uniform slot) of an ensemble given by its
  // probabilities [H, C] on AllHeldOut()'s rows: FENS's aggregated
  // ensemble (server/round/fens_ensemble.h), which no weighting of members
  // expresses.
  absl::StatusOr<ClientLevelResult> ScoreHeldOut(const at::Tensor& probs) const;

 private:
  absl::StatusOr<ClientLevelResult> EvaluateClients(
      const std::vector<std::shared_ptr<Net>>& nets, int64_t batch_size,
      c10::Device device) const;

  double holdout_ = 0;
  double gamma_ = 0;
  Dataset train_;
  std::vector<ClientSplit> splits_;  // one per client id
};

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_CLIENT_EVALUATOR_H_
