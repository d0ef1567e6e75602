// One UploadDelta stream put back together chunk by chunk, without gRPC, so
// that the rules of the stream can be tested and fuzzed on their own.
//
// The first chunk carries the header, whose encoded_size is the size of the
// whole; every later chunk carries data and no header, and the whole must
// be exactly the declared size. An empty chunk, a repeated header or a
// byte past the declared size ends the stream at once: a peer can hold a
// handler only as long as it sends real bytes.
// Not thread-safe: one per stream.
#ifndef SHEFL_SERVER_STATE_UPLOAD_ASSEMBLER_H_
#define SHEFL_SERVER_STATE_UPLOAD_ASSEMBLER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "shefl.pb.h"

namespace shefl {

class UploadAssembler {
 public:
  // Declared sizes above `max_bytes` are refused before anything is
  // allocated (the caller's budget check is usually tighter still).
  explicit UploadAssembler(uint64_t max_bytes) : max_bytes_(max_bytes) {}

  // The stream's first chunk. INVALID_ARGUMENT without a header, or with
  // the refusal reason "oversize" for a size above the maximum or first
  // data longer than the size declared.
  absl::Status Begin(const v1::DeltaChunk& first);

  // A later chunk. INVALID_ARGUMENT for a repeated header or an empty
  // chunk, or with the reason "oversize" for data past the declared size
  // (a chunk after the last byte included). Call after a successful Begin
  // only, and not again after a refusal.
  absl::Status Add(const v1::DeltaChunk& chunk);

  // All declared bytes have arrived.
  bool complete() const { return blob_.size() == size_; }

  // At the end of the stream: the bytes, or INVALID_ARGUMENT when fewer
  // than declared arrived. Leaves the assembler empty.
  absl::StatusOr<std::string> Finish();

 private:
  absl::Status Oversize() const;

  const uint64_t max_bytes_;
  uint64_t size_ = 0;  // the header's encoded_size
  std::string blob_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_UPLOAD_ASSEMBLER_H_
