// Byte strings as the secure-aggregation primitives pass them, and the
// big-endian fields their encodings are made of. Every encoding that is
// hashed or authenticated (the session id, the AAD of a share box, a
// serialised Shamir share) writes integers big-endian with fixed widths, so
// two machines always build the same bytes.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_BYTES_H_
#define SHEFL_COMMON_SECURE_BYTES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace shefl {

using Bytes = std::vector<uint8_t>;
using ByteView = absl::Span<const uint8_t>;
// A 32-byte key, public key, secret or digest.
using Key32 = std::array<uint8_t, 32>;

// Appends `v` as 4 or 8 bytes, most significant first.
void AppendBe32(Bytes* out, uint32_t v);
void AppendBe64(Bytes* out, uint64_t v);
void AppendBytes(Bytes* out, ByteView v);

// Reads 4 or 8 big-endian bytes at `p` (the caller checked the length).
uint32_t ReadBe32(const uint8_t* p);
uint64_t ReadBe64(const uint8_t* p);

// A view of the characters of `s` as bytes (labels such as "shefl mask").
ByteView AsBytes(std::string_view s);

// Lower-case hex of `v`, and its inverse, which refuses odd lengths and
// characters other than [0-9a-fA-F].
std::string ToHex(ByteView v);
absl::StatusOr<Bytes> FromHex(std::string_view hex);

// A Key32 from exactly 32 bytes, else InvalidArgument naming `what`.
absl::StatusOr<Key32> ToKey32(ByteView v, std::string_view what);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_BYTES_H_
