// Ensemble evaluation: accuracy, NLL, calibration and uncertainty of the M
// members and of their average, and the personalised member weights of
// Fed-ensemble (docs/DESIGN.md, "Ensemble inference").
//
// Definitions (natural logarithms; p_k(.|x) is member k's softmax, w_k the
// member weights, uniform 1/M unless given):
//   ensemble p(.|x)       = sum_k w_k p_k(.|x)
//   accuracy              = mean[argmax p(.|x) == y]
//   nll                   = mean[-log p(y|x)]
//   ece                   = sum_b (n_b/N) |acc_b - conf_b| over 15 equal-
//                           width bins of conf = max_c p(c|x); bin b holds
//                           conf in (b/15, (b+1)/15] (conf 0 goes to bin 0)
//   mean_entropy          = mean[-sum_c p(c|x) log p(c|x)]
//   mean_member_variance  = mean over samples of the variance over members
//                           (population, weighted by w_k) of p_k(yhat|x),
//                           the probability each member gives the
//                           ensemble's predicted class yhat = argmax p(.|x)
//   predictive_variance   = mean over samples of
//                           sum_c sum_k w_k (p_k(c|x) - p(c|x))^2: the
//                           variance across members of the whole predictive
//                           distribution, the "knowledge uncertainty" term
//                           E_theta[(h_theta(x) - hbar(x))^2] of 004 Eq. 10
//                           with h the probability vector (its squared
//                           Euclidean deviation, summed over classes)
//   mutual_information    = mean[H(p(.|x)) - sum_k w_k H(p_k(.|x))] (the
//                           entropy of the ensemble less the members'
//                           mean entropy; >= 0)
//   *_correct, *_wrong    = the same means over the samples the ensemble
//                           predicts right (yhat == y) or wrong; 0 when
//                           there is no such sample (num_correct says)
// Ties in argmax go to the lowest class index.
// Thread-compatible: ClientLevelResult and EvalResult are plain values.
#ifndef SHEFL_COMMON_LEARN_EVALUATE_H_
#define SHEFL_COMMON_LEARN_EVALUATE_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/dataset.h"
#include "common/fed/client_metrics.h"
#include "common/learn/eval_batches.h"
#include "common/learn/models.h"

namespace shefl {

// Client-level figures of one evaluation (common/fed/client_metrics.h has the
// definitions; server/round/client_evaluator.h computes them).
struct ClientLevelResult {
  bool evaluated = false;         // eval.client_holdout > 0
  int64_t samples = 0;            // held-out samples over all clients
  ClientLevelSummary uniform;     // the uniform ensemble on each held-out part
  bool personalised = false;      // eval.gamma > 0
  ClientLevelSummary personal;    // each client's alpha_i ensemble (if evaluated)
  double weight_entropy = 0;      // mean over clients of H(alpha_i)
  double weight_max = 0;          // mean over clients of max_k alpha_ik
};

struct EvalResult {
  int64_t samples = 0;
  double ensemble_accuracy = 0;
  double ensemble_nll = 0;
  double ece = 0;
  double mean_entropy = 0;
  double mean_member_variance = 0;
  double predictive_variance = 0;
  double mutual_information = 0;
  int64_t num_correct = 0;
  double entropy_correct = 0, entropy_wrong = 0;
  double predictive_variance_correct = 0, predictive_variance_wrong = 0;
  std::vector<double> member_accuracy;  // one per member
  std::vector<double> member_nll;       // one per member
  ClientLevelResult client_level;       // set by the coordinator's evaluator
};

constexpr int kEceBins = 15;

// From members' logits [M, N, C] and labels [N] (any device). `weights`
// is empty (uniform) or M non-negative numbers summing to 1 (e.g.
// PersonalisedWeights). Shapes or weights wrong -> InvalidArgument.
absl::StatusOr<EvalResult> EvaluateFromLogits(
    const at::Tensor& logits, const at::Tensor& labels,
    const std::vector<double>& weights = {});

// The same from probabilities [M, N, C] (rows summing to 1). A zero
// probability of the true class gives log(1e-30) in the NLL, not infinity.
absl::StatusOr<EvalResult> EvaluateFromProbs(
    const at::Tensor& probs, const at::Tensor& labels,
    const std::vector<double>& weights = {});

// Runs every model over `data` (its first `max_samples`, all when <= 0) in
// batches of `batch_size` under NoGradGuard in eval mode, on `device`
// (models are moved there; each model's train/eval mode is restored). On
// the CPU, `par` shares the batches among threads (eval_batches.h); where
// par.stack gives a stack (the coordinator hands in the stacked room's,
// which stacks on CUDA), the members run as one forward. The figures
// depend on neither beyond float rounding.
absl::StatusOr<EvalResult> EvaluateEnsemble(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    int64_t batch_size, int64_t max_samples, c10::Device device,
    const std::vector<double>& weights = {}, const EvalThreads& par = {});

// Each member's mean cross-entropy on data[indices] (e.g. a client's own
// training shard): the loss_i(w_k) that PersonalisedWeights takes. One
// member after another, on one thread.
absl::StatusOr<std::vector<double>> MemberLosses(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, int64_t batch_size,
    c10::Device device);

// Every member's log-probabilities of data[indices]: [M, n, C] fp32 on the
// CPU (same run conditions as EvaluateEnsemble). Bad indices ->
// InvalidArgument.
absl::StatusOr<at::Tensor> MemberLogProbs(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, int64_t batch_size,
    c10::Device device);

// alpha_k = softmax_k(-loss_k / gamma) for one client's member losses.
// gamma > 0; a large gamma gives uniform weights, a small one picks the
// member with the lowest loss. Non-finite losses or gamma <= 0 ->
// InvalidArgument.
absl::StatusOr<std::vector<double>> PersonalisedWeights(
    const std::vector<double>& member_losses, double gamma);

// The same for every client: losses[i][k] = loss_i(w_k).
absl::StatusOr<std::vector<std::vector<double>>> PersonalisedWeights(
    const std::vector<std::vector<double>>& losses, double gamma);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_EVALUATE_H_
