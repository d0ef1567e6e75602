// What a daemon sends for one (client, model) delta: error feedback when
// it is on, top-k on the delta's own device, encoding, and the residual
// kept from what the coordinator will decode (so fp16/bf16 rounding is fed
// back as well as what top-k dropped). LocalTrainer calls it after
// training; tests call it directly over several rounds.
#ifndef SHEFL_CLIENT_DELTA_COMPRESSOR_H_
#define SHEFL_CLIENT_DELTA_COMPRESSOR_H_

#include <memory>
#include <string>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include "absl/status/statusor.h"
#include "common/codec.h"
#include "common/compress.h"

namespace shefl {

class DeltaCompressor {
 public:
  // Residuals live on `device` when `error_feedback` is on.
  DeltaCompressor(ValueType value_type, bool error_feedback,
                  c10::Device device);

  // The codec encoding of the top-k of delta (+ residual); sets *nnz to
  // the number of pairs sent.
  absl::StatusOr<std::string> Compress(int64_t client, int64_t model,
                                       const at::Tensor& delta, int64_t k,
                                       uint64_t* nnz);

  ValueType value_type() const { return value_type_; }
  // Null when error feedback is off.
  const ErrorFeedback* feedback() const { return feedback_.get(); }

 private:
  const ValueType value_type_;
  std::unique_ptr<ErrorFeedback> feedback_;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_DELTA_COMPRESSOR_H_
