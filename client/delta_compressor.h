// What a daemon sends for one (client, model) delta: error feedback when
// it is on, top-k on the delta's own device, encoding, and the residual
// kept from what the coordinator will decode (so fp16/bf16 rounding is fed
// back as well as what top-k dropped). The residual is staged per round
// and settled by the coordinator's answer (client/residual_book.h).
// LocalTrainer calls it after training; tests call it directly.
// Thread-safe: its own fields are fixed at construction and the residual
// book it writes is thread-safe (LocalTrainer's slots share one).
#ifndef SHEFL_CLIENT_DELTA_COMPRESSOR_H_
#define SHEFL_CLIENT_DELTA_COMPRESSOR_H_

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/residual_book.h"
#include "common/learn/compress.h"
#include "common/sparse/codec.h"

namespace shefl {

class DeltaCompressor {
 public:
  // Residuals live on `device` when `error_feedback` is on; accepted ones
  // are also written under `state_dir` (none when empty).
  DeltaCompressor(ValueType value_type, bool error_feedback,
                  c10::Device device, std::string state_dir = "",
                  uint64_t fingerprint = 0);

  // The codec encoding of the top-k of delta (+ the residual in force for
  // `round`); sets *nnz to the number of pairs sent.
  absl::StatusOr<std::string> Compress(int64_t client, int64_t model,
                                       int64_t round, const at::Tensor& delta,
                                       int64_t k, uint64_t* nnz);

  // The coordinator's answer to `round`'s upload: accepted commits the
  // residual it left, refused puts the one before it back in force.
  absl::Status Settle(int64_t client, int64_t model, int64_t round,
                      bool accepted);

  ValueType value_type() const { return value_type_; }
  // Null when error feedback is off.
  ResidualBook* residuals() const { return residuals_.get(); }

 private:
  const ValueType value_type_;
  const c10::Device device_;
  std::unique_ptr<ResidualBook> residuals_;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_DELTA_COMPRESSOR_H_
