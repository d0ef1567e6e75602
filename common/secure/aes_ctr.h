// AES-256 in counter mode as the pseudorandom generator of the masks. A
// mask is the keystream, read as 32-bit words, added to or subtracted from
// the encoded update mod 2^32; AES with a key used for one stream only is
// indistinguishable from random, so a masked upload is too.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_AES_CTR_H_
#define SHEFL_COMMON_SECURE_AES_CTR_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"

namespace shefl {

inline constexpr size_t kAesCtrIvBytes = 16;

// The first `n` bytes of the AES-256-CTR keystream under `key` (32 bytes)
// from the initial counter block `iv` (16 bytes), which counts up as one
// 128-bit big-endian integer (NIST SP 800-38A's standard incrementing
// function). XOR with a plaintext gives its CTR encryption. A secret: it
// is what a mask adds.
absl::StatusOr<SecretBytes> AesCtrKeystream(ByteView key, ByteView iv,
                                            size_t n);

// The mask stream: `n_words` words of the keystream under `key` from the
// all-zero counter block, word i being keystream bytes 4i..4i+3 read
// little-endian. The zero start is safe because every stream has a key of
// its own (derived per pair or seed and per session), never reused with
// another counter.
absl::StatusOr<SecretWords> AesCtrWords(ByteView key, size_t n_words);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_AES_CTR_H_
