// The messages of a secure-aggregation session (common/secure/messages.h)
// to and from their proto/ form, with the checks a receiver needs: key
// and box sizes, a masked input of exactly K words, shares of the right
// size. Both the coordinator and the daemon use them, so the two ends read
// the same bytes the same way.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_WIRE_SECURE_WIRE_H_
#define SHEFL_COMMON_SECURE_WIRE_SECURE_WIRE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/secure/messages.h"
#include "shefl.pb.h"

namespace shefl {

v1::SecureKeys ToProto(const KeyAdvert& advert);
absl::StatusOr<KeyAdvert> FromProto(const v1::SecureKeys& keys);

void AddBoxes(const std::vector<ShareBox>& boxes, v1::SecureBoxes* out);
// Every box of `in` (each 100 bytes).
absl::StatusOr<std::vector<ShareBox>> BoxesFromProto(const v1::SecureBoxes& in);

// The words little-endian: the first `value_words` (the K values) in
// `value_bits` bits each (16 or 32: a 16-bit session sends each value's
// masked word mod 2^16, and the sum mod 2^16 is what the masks leave),
// the rest (the vote's counts) in 32.
v1::SecureInput ToProto(const MaskedInput& input, uint64_t value_words = 0,
                        int value_bits = 32);
// `words` words in all, of which `value_words` in `value_bits` bits (read
// back as words below 2^value_bits); the party is the call's.
absl::StatusOr<MaskedInput> FromProto(const v1::SecureInput& in,
                                      uint32_t party, uint64_t words,
                                      uint64_t value_words = 0,
                                      int value_bits = 32);

void ToProto(const UnmaskRequest& request, v1::SecureUnmask* out);
UnmaskRequest FromProto(const v1::SecureUnmask& in);

v1::SecureShares ToProto(const UnmaskReply& reply);
absl::StatusOr<UnmaskReply> FromProto(const v1::SecureShares& in,
                                      uint32_t party);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_WIRE_SECURE_WIRE_H_
