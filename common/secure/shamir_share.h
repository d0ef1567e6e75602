// One Shamir share of a byte secret, and its fixed-size wire form. A
// secret of L bytes is cut into ceil(L / 7) chunks of 7 bytes (the last
// one shorter), each read as a little-endian integer below 2^56 < p and
// shared with a polynomial of its own over GF(2^61 - 1)
// (common/secure/gf61.h). A share is the point x (a party's index + 1, never
// 0, where the secret lies) and one field element per chunk.
//
// Wire form (all big-endian): x as 4 bytes, then each element as 8 bytes,
// so 4 + 8 * ceil(L / 7) bytes: 28 for a 16-byte self-mask seed, 44 for a
// 32-byte X25519 private key. The size alone tells a truncated share.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_SHAMIR_SHARE_H_
#define SHEFL_COMMON_SECURE_SHAMIR_SHARE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/secure/bytes.h"

namespace shefl {

inline constexpr size_t kShamirChunkBytes = 7;

// A share is a message as well as a secret (t of them give the secret
// back): it is sent, compared and copied, so it stays copyable, and every
// copy wipes its elements when it dies or is assigned over
// (common/secure/secret.h says what wiping does and does not do). y is
// sized once; growing it would free an unwiped buffer.
struct ShamirShare {
  uint32_t x = 0;           // the evaluation point, 1..n
  std::vector<uint64_t> y;  // f_c(x) for each chunk c, each below p

  ShamirShare() = default;
  ShamirShare(const ShamirShare&) = default;
  ShamirShare(ShamirShare&&) noexcept = default;  // leaves the source empty
  ShamirShare& operator=(const ShamirShare& other);
  ShamirShare& operator=(ShamirShare&& other) noexcept;
  ~ShamirShare() { Wipe(); }
  // Zeros the elements now (the size stays).
  void Wipe();
};

// ceil(secret_bytes / 7), the number of field elements of a share.
constexpr size_t ShamirChunks(size_t secret_bytes) {
  return (secret_bytes + kShamirChunkBytes - 1) / kShamirChunkBytes;
}

// 4 + 8 * ShamirChunks(secret_bytes), the size of the wire form.
constexpr size_t ShamirShareBytes(size_t secret_bytes) {
  return 4 + 8 * ShamirChunks(secret_bytes);
}

Bytes SerializeShamirShare(const ShamirShare& share);
// The same bytes into `out`, which holds exactly ShamirShareBytes of the
// share's secret (InvalidArgument otherwise): how a share is packed into a
// secret's buffer without a plain copy on the way.
absl::Status WriteShamirShare(const ShamirShare& share, absl::Span<uint8_t> out);

// The share in `bytes`, a share of a `secret_bytes`-byte secret. Refuses
// (InvalidArgument) a wrong size, x = 0 and an element not below p.
absl::StatusOr<ShamirShare> ParseShamirShare(ByteView bytes,
                                             size_t secret_bytes);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SHAMIR_SHARE_H_
