#include "client/delta_compressor.h"

namespace shefl {

DeltaCompressor::DeltaCompressor(ValueType value_type, bool error_feedback,
                                 c10::Device device)
    : value_type_(value_type),
      feedback_(error_feedback ? std::make_unique<ErrorFeedback>(device)
                               : nullptr) {}

absl::StatusOr<std::string> DeltaCompressor::Compress(int64_t client,
                                                      int64_t model,
                                                      const at::Tensor& delta,
                                                      int64_t k,
                                                      uint64_t* nnz) {
  const at::Tensor corrected =
      feedback_ ? feedback_->Apply(client, model, delta) : delta;
  auto sparse = TopK(corrected, k);
  if (!sparse.ok()) return sparse.status();
  *nnz = sparse->nnz();
  auto encoded = EncodeSparseDelta(*sparse, value_type_);
  if (!encoded.ok() || !feedback_) return encoded;
  // Feed back what the coordinator will decode (fp16/bf16 rounding too).
  if (value_type_ != ValueType::kFp32) {
    auto sent = DecodeSparseDelta(*encoded, sparse->dim, sparse->nnz());
    if (!sent.ok()) return sent.status();
    *sparse = std::move(*sent);
  }
  if (auto st = feedback_->Update(client, model, corrected, *sparse); !st.ok())
    return st;
  return encoded;
}

}  // namespace shefl
