// Top-k sparsification of a model's flat fp32 delta, the k rules of the
// compression budget (DESIGN.md section 2), and error feedback.
//
// Top-k runs on the tensor's own device (a GPU where the client trains on
// one) and only the kept (index, value) pairs cross to the host. The result
// is deterministic: among equal magnitudes the lower index wins, so the
// same delta gives the same SparseDelta on every device and run.
#ifndef SHEFL_COMMON_COMPRESS_H_
#define SHEFL_COMMON_COMPRESS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sparse/sparse_delta.h"
#include "common/core/mutex.h"

namespace shefl {

// k for a density or an HPC: KForDensity / KForHpc in common/fed/schedule.h.

// The k entries of largest magnitude of a 1-D fp32 tensor, indices
// ascending; ties at the k-th magnitude go to the lower indices. k is
// clamped to [0, d]. InvalidArgument for a non-1-D or non-fp32 tensor or
// one holding NaN/Inf.
// On the CPU a radix select over the float bits (common/sparse/radix_topk.h);
// on CUDA, in a build with the CUDA backend (common/learn/topk_backend.h),
// the sampled-threshold kernels of cuda/; elsewhere tensor ops on the
// tensor's device.
absl::StatusOr<SparseDelta> TopK(const at::Tensor& delta, int64_t k);

// The same result by tensor ops alone (kthvalue, then a tie fix-up) on any
// device: the path CUDA takes, and the reference the radix select is
// tested against.
absl::StatusOr<SparseDelta> TopKWithTensorOps(const at::Tensor& delta,
                                              int64_t k);

// The dense fp32 vector of a SparseDelta (zeros where nothing was sent), on
// `device`. For tests and error feedback; expects what the codec
// guarantees (sizes equal, indices unique and < dim) and returns an
// undefined tensor when sizes differ or an index is out of range.
at::Tensor Densify(const SparseDelta& sparse, at::Device device = at::kCPU);

// corrected - Densify(sent) on `device`: what error feedback carries into
// the next round. `sent` should hold the values as the server decodes them
// (after fp16/bf16 rounding), so that the rounding error is fed back too.
absl::StatusOr<at::Tensor> ResidualAfter(const at::Tensor& corrected,
                                         const SparseDelta& sent,
                                         at::Device device);

// Error feedback (Stich et al.): what top-k dropped from one round's delta
// for (client, model) is added to the next delta for the same pair, so that
// over rounds every coordinate is eventually sent. Residuals live on one
// device. Thread-safe.
class ErrorFeedback {
 public:
  explicit ErrorFeedback(at::Device device = at::kCPU) : device_(device) {}

  // delta + residual(client, model), on delta's device; delta itself (not
  // a copy) when there is no residual yet. A residual of another shape (the
  // model was replaced) is discarded.
  at::Tensor Apply(int64_t client, int64_t model, const at::Tensor& delta);

  // Stores corrected - Densify(sent) as the residual of (client, model).
  // `sent` should hold the values as the server will decode them (after
  // fp16/bf16 rounding), so that the rounding error is fed back too.
  absl::Status Update(int64_t client, int64_t model,
                      const at::Tensor& corrected, const SparseDelta& sent);

  // The residual, or an undefined tensor when there is none.
  at::Tensor Residual(int64_t client, int64_t model) const;

  void Clear();
  size_t size() const;

 private:
  const at::Device device_;
  mutable Mutex mu_;
  std::map<std::pair<int64_t, int64_t>, at::Tensor> residuals_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_COMMON_COMPRESS_H_
