// Top-k sparsification of a model's flat fp32 delta, and the residual that
// error feedback carries to the next round (the daemon keeps residuals in
// client/residual_book.h; the budget's k rules are in common/fed/schedule.h,
// docs/DESIGN.md "Compression budget").
//
// Top-k runs on the tensor's own device (a GPU where the client trains on
// one) and only the kept (index, value) pairs cross to the host. The result
// is deterministic: among equal magnitudes the lower index wins, so the
// same delta gives the same SparseDelta on every device and run.
#ifndef SHEFL_COMMON_LEARN_COMPRESS_H_
#define SHEFL_COMMON_LEARN_COMPRESS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sparse/sparse_delta.h"

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

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_COMPRESS_H_
