// A share box: what party u sends party v in the share stage, the shares
// of u's self-mask seed and masking private key, readable by v alone. The
// key is HKDF-SHA256(X25519(c_u, c_v), salt = sid, info = "shefl enc") from
// the two encryption key pairs; the cipher AES-256-GCM with
//   AAD = sid (32) || u (4) || v (4)          ids big-endian
// so a box opens only in its session and only as "from u to v": one
// replayed from another round, or turned round from v to u (the key is the
// same both ways), is refused.
//
// Box bytes: nonce (12, random) || ciphertext || tag (16). The plaintext a
// party seals is PackPeerShares: the seed share (28 bytes) then the key
// share (44 bytes), common/secure/shamir_share.h's wire form, so a box is
// 12 + 72 + 16 = 100 bytes.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_SHARE_BOX_H_
#define SHEFL_COMMON_SECURE_SHARE_BOX_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"
#include "common/secure/session_id.h"
#include "common/secure/shamir_share.h"

namespace shefl {

// The shares party u gives party v (both at v's x).
struct PeerShares {
  ShamirShare self_seed;     // of the 16-byte self-mask seed b_u
  ShamirShare mask_private;  // of the 32-byte masking private key s_u
};

inline constexpr size_t kPeerSharesBytes = 28 + 44;
inline constexpr size_t kShareBoxBytes = 12 + kPeerSharesBytes + 16;

// The 72-byte plaintext of a box (a secret: shares).
SecretBytes PackPeerShares(const PeerShares& shares);
// Its inverse; refuses a wrong size, a bad share, or two different x.
absl::StatusOr<PeerShares> UnpackPeerShares(ByteView plaintext);

// The box key of a pair, from one side's encryption private key and the
// other's public key (either side computes the same key).
absl::StatusOr<SecretKey32> ShareBoxKey(ByteView own_private,
                                        ByteView peer_public,
                                        const SessionId& sid);

// Seals `plaintext` from party `from` to party `to`, with a fresh random
// nonce; `from_private` is the sender's encryption private key.
absl::StatusOr<Bytes> SealShareBox(ByteView plaintext, const SessionId& sid,
                                   uint32_t from, uint32_t to,
                                   ByteView from_private, ByteView to_public);

// Opens a box that claims to come from `from` to `to` in session `sid`;
// `to_private` is the receiver's encryption private key. DataLoss when the
// box was changed, or was sealed for another session, direction or pair.
absl::StatusOr<SecretBytes> OpenShareBox(ByteView box, const SessionId& sid,
                                         uint32_t from, uint32_t to,
                                         ByteView to_private,
                                         ByteView from_public);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SHARE_BOX_H_
