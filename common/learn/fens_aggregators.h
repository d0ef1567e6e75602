// FENS's aggregation functions (002, section 3.3): how the coordinator
// combines its members' softmax outputs into one prediction. `probs` are
// the members' probabilities [M, N, C] (M members, N samples, C classes).
//
//   mean      f = (1/M) sum_i pi_i                           (no parameters)
//   weighted  f = sum_i lambda_i (.) pi_i, lambda_i[c] = n_i[c] / sum_j n_j[c]
//             from each member's per-class training counts (002 Eq. 5
//             with Gong et al.'s weights; M*C parameters)
//   linear    f = softmax(sum_i lambda_i (.) pi_i + b), lambda [M, C] and
//             b [C] learned on the proxy set (Eq. 5 trained, with a bias
//             and a softmax so that it is a proper probability; lambda
//             starts at 1, b at 0: the mean's argmax). M*C + C parameters
//   nn        f = softmax(W2 relu(W1 [pi_1 .. pi_M] + b1) + b2), one hidden
//             layer of H units (002: H = 120); W init U(+-1/sqrt(fan_in))
//             as PyTorch's Linear. (M*C)*H + H + H*C + C parameters
// The trainable ones minimise the mean cross-entropy on the proxy set with
// Adam (beta 0.9/0.999, eps 1e-8, no weight decay), batches in a seeded
// order, lr * lr_decay^epoch; gradients are written out, so the fit is a
// pure function of (inputs, config, seed) on one thread.
// Every Combine returns rows that sum to 1; argmax is the prediction.
// Thread-compatible: fitted once, then only read.
#ifndef SHEFL_COMMON_LEARN_FENS_AGGREGATORS_H_
#define SHEFL_COMMON_LEARN_FENS_AGGREGATORS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"

namespace shefl {

class EnsembleAggregator {
 public:
  virtual ~EnsembleAggregator() = default;
  // [M, N, C] member probabilities -> [N, C] ensemble probabilities.
  virtual at::Tensor Combine(const at::Tensor& probs) const = 0;
  // q: what the aggregator adds to the deployed model (fp32 numbers).
  virtual int64_t num_params() const = 0;
  virtual std::string name() const = 0;
};

// The plain mean (also FENS's comparison figure).
std::unique_ptr<EnsembleAggregator> MeanAggregator();

// `config.aggregator` fitted: `proxy_probs` [M, N, C] with `proxy_labels`
// [N] (int64) for linear and nn; `label_counts` [M][C] for weighted.
// InvalidArgument when shapes disagree, a trainable aggregator has no
// proxy sample, or a class has no training sample at any member (weighted).
absl::StatusOr<std::unique_ptr<EnsembleAggregator>> FitAggregator(
    const FensConfig& config, uint64_t seed, const at::Tensor& proxy_probs,
    const at::Tensor& proxy_labels,
    const std::vector<std::vector<int64_t>>& label_counts);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_FENS_AGGREGATORS_H_
