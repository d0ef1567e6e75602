// HKDF-SHA256 (RFC 5869), extract then expand, through OpenSSL's EVP_KDF.
// It turns an X25519 agreement or a self-mask seed into the AES key of one
// purpose: the salt is the session id and the info names the purpose (and,
// for pairwise masks, the pair), so no two purposes or sessions share a key.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_HKDF_H_
#define SHEFL_COMMON_SECURE_HKDF_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"

namespace shefl {

// `length` bytes of output keying material, 1 to 255 * 32 (the RFC's
// bound); an empty salt stands for 32 zero bytes, as the RFC says. `ikm`
// must not be empty. `info` holds at most 1024 bytes (OpenSSL's bound).
// The output is a secret (it keys masks and boxes).
absl::StatusOr<SecretBytes> HkdfSha256(ByteView ikm, ByteView salt,
                                       ByteView info, size_t length);

// The same, 32 bytes: an AES-256 key.
absl::StatusOr<SecretKey32> HkdfSha256Key(ByteView ikm, ByteView salt,
                                          ByteView info);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_HKDF_H_
