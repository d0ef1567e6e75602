// SHA-256 (FIPS 180-4) of a byte string, through OpenSSL's EVP digest: the
// hash of the session id's encoding (common/secure/session_id.h).
// Thread-safe: a free function without state.
#ifndef SHEFL_COMMON_SECURE_SHA256_H_
#define SHEFL_COMMON_SECURE_SHA256_H_

#include "absl/status/statusor.h"
#include "common/secure/bytes.h"

namespace shefl {

absl::StatusOr<Key32> Sha256(ByteView data);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SHA256_H_
