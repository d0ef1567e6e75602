// What the session id (common/secure/session_id.h) hashes of the public
// inputs of a secure round: the support C_t and the global model. Both
// ends compute them the same way, so a party that was sent another
// support, or trained another model version, derives another session id
// and its boxes do not open.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_PUBLIC_HASHES_H_
#define SHEFL_COMMON_SECURE_PUBLIC_HASHES_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/secure/bytes.h"

namespace shefl {

// SHA-256 of the coordinates, each 4 bytes big-endian, in order.
absl::StatusOr<Key32> SupportHash(absl::Span<const uint32_t> support);

// SHA-256 of the model's flat fp32 weights as stored (little-endian).
absl::StatusOr<Key32> ModelHash(absl::Span<const float> weights);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_PUBLIC_HASHES_H_
