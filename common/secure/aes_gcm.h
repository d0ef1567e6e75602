// AES-256-GCM, the authenticated encryption of the share boxes
// (common/secure/share_box.h): a 12-byte nonce, a 16-byte tag appended to
// the ciphertext, and additional authenticated data that binds a box to its
// session and its sender and receiver.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_AES_GCM_H_
#define SHEFL_COMMON_SECURE_AES_GCM_H_

#include <cstddef>

#include "absl/status/statusor.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"

namespace shefl {

inline constexpr size_t kGcmNonceBytes = 12;
inline constexpr size_t kGcmTagBytes = 16;

// ciphertext || tag (plaintext size + 16 bytes). `key` is 32 bytes, `nonce`
// 12; a nonce must never repeat under one key.
absl::StatusOr<Bytes> AesGcmSeal(ByteView key, ByteView nonce,
                                 ByteView plaintext, ByteView aad);

// The plaintext of `sealed` (ciphertext || tag), or DataLoss when the tag
// does not verify: a changed bit of ciphertext, tag, nonce or AAD, a wrong
// key, or fewer than 16 bytes. Nothing of the plaintext comes back then;
// the buffer it was decrypted into is wiped. The plaintext is a secret
// (a box holds shares).
absl::StatusOr<SecretBytes> AesGcmOpen(ByteView key, ByteView nonce,
                                       ByteView sealed, ByteView aad);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_AES_GCM_H_
