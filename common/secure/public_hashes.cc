#include "common/secure/public_hashes.h"

#include "common/secure/sha256.h"

namespace shefl {

absl::StatusOr<Key32> SupportHash(absl::Span<const uint32_t> support) {
  Bytes bytes;
  bytes.reserve(4 * support.size());
  for (uint32_t i : support) AppendBe32(&bytes, i);
  return Sha256(bytes);
}

absl::StatusOr<Key32> ModelHash(absl::Span<const float> weights) {
  static_assert(sizeof(float) == 4, "fp32 weights");
  return Sha256(ByteView(reinterpret_cast<const uint8_t*>(weights.data()),
                         4 * weights.size()));
}

}  // namespace shefl
