#include "client/delta_compressor.h"

#include <ATen/ATen.h>

#include "common/core/status_macros.h"

namespace shefl {

DeltaCompressor::DeltaCompressor(ValueType value_type, bool error_feedback,
                                 c10::Device device, std::string state_dir,
                                 uint64_t fingerprint)
    : value_type_(value_type),
      device_(device),
      residuals_(error_feedback ? std::make_unique<ResidualBook>(
                                      std::move(state_dir), fingerprint)
                                : nullptr) {}

absl::StatusOr<std::string> DeltaCompressor::Compress(
    int64_t client, int64_t model, int64_t round, const at::Tensor& delta,
    int64_t k, uint64_t* nnz) {
  at::Tensor corrected = delta;
  if (residuals_) {
    // A residual of another shape belongs to a model that was replaced.
    const at::Tensor r = residuals_->InForce(client, model, round);
    if (r.defined() && r.sizes().equals(delta.sizes()))
      corrected = delta + r.to(delta.device());
  }
  SHEFL_ASSIGN_OR_RETURN(auto sparse, TopK(corrected, k));
  *nnz = sparse.nnz();
  auto encoded = EncodeSparseDelta(sparse, value_type_);
  if (!encoded.ok() || !residuals_) return encoded;
  // Feed back what the coordinator will decode (fp16/bf16 rounding too).
  if (value_type_ != ValueType::kFp32) {
    SHEFL_ASSIGN_OR_RETURN(
        sparse, DecodeSparseDelta(*encoded, sparse.dim, sparse.nnz()));
  }
  SHEFL_ASSIGN_OR_RETURN(auto residual,
                         ResidualAfter(corrected, sparse, device_));
  SHEFL_RETURN_IF_ERROR(
      residuals_->Stage(client, model, round, std::move(residual)));
  return encoded;
}

absl::Status DeltaCompressor::Settle(int64_t client, int64_t model,
                                     int64_t round, bool accepted) {
  if (!residuals_) return absl::OkStatus();
  if (accepted) return residuals_->Commit(client, model, round);
  residuals_->Discard(client, model, round);
  return absl::OkStatus();
}

}  // namespace shefl
