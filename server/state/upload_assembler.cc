#include "server/state/upload_assembler.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/state/round_state.h"

namespace shefl {

absl::Status UploadAssembler::Oversize() const {
  return WithReason(absl::InvalidArgumentError(absl::StrCat(
                        "oversize upload: more than the ", size_,
                        " bytes declared")),
                    "oversize");
}

absl::Status UploadAssembler::Begin(const v1::DeltaChunk& first) {
  if (!first.has_header())
    return absl::InvalidArgumentError("malformed upload: no header");
  size_ = first.header().encoded_size();
  if (size_ > max_bytes_)
    return WithReason(absl::InvalidArgumentError(absl::StrCat(
                          "oversize upload: ", size_,
                          " bytes declared, at most ", max_bytes_, " allowed")),
                      "oversize");
  if (first.data().size() > size_) return Oversize();
  blob_ = first.data();
  blob_.reserve(size_);  // at most max_bytes_, checked above
  return absl::OkStatus();
}

absl::Status UploadAssembler::Add(const v1::DeltaChunk& chunk) {
  if (complete()) return Oversize();  // one chunk past the last byte
  if (chunk.has_header())
    return absl::InvalidArgumentError("malformed upload: header repeated");
  if (chunk.data().empty())
    return absl::InvalidArgumentError("malformed upload: empty chunk");
  if (chunk.data().size() > size_ - blob_.size()) return Oversize();
  blob_ += chunk.data();
  return absl::OkStatus();
}

absl::StatusOr<std::string> UploadAssembler::Finish() {
  if (!complete())
    return absl::InvalidArgumentError(absl::StrCat(
        "truncated upload: ", blob_.size(), " bytes received, ", size_,
        " declared"));
  return std::exchange(blob_, std::string());
}

}  // namespace shefl
