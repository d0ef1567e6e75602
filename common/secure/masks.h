// The masks of secure aggregation and their removal, as described in
// docs/DESIGN.md, "Secure aggregation: the primitives". Party u uploads
//   y_u = q_u + PRG(b_u) + sum_{v > u} PRG(s_uv) - sum_{v < u} PRG(s_uv)
// mod 2^32, word by word, where PRG is the AES-256-CTR word stream
// (common/secure/aes_ctr.h) under
//   self:     HKDF-SHA256(b_u, salt = sid, info = "shefl self")
//   pairwise: HKDF-SHA256(X25519(s_u, s_v), salt = sid,
//                         info = "shefl mask" || min(u,v) || max(u,v))
// (ids as 4 bytes big-endian). u and v derive the same pairwise key, and
// add and subtract its stream, so the pairwise masks of two parties that
// both upload cancel in the sum. The coordinator removes the rest: the self
// mask of each survivor from its reconstructed seed, and for each dropped
// party d and survivor u the stream of s_ud that u's upload carries, which
// it recomputes from d's reconstructed private key and u's public key.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_MASKS_H_
#define SHEFL_COMMON_SECURE_MASKS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"
#include "common/secure/session_id.h"

namespace shefl {

inline constexpr size_t kSelfSeedBytes = 16;
using SelfSeed = Secret<kSelfSeedBytes>;

// A fresh self-mask seed b from OpenSSL's private generator.
absl::StatusOr<SelfSeed> GenerateSelfSeed();

// The AES key of the self mask of seed `b` in session `sid`.
absl::StatusOr<SecretKey32> SelfMaskKey(const SelfSeed& b,
                                        const SessionId& sid);

// The AES key of the pairwise mask of parties u != v, computed by u from
// its masking private key and v's public key (or by v the other way round,
// or by the coordinator from a reconstructed private key): the same key.
absl::StatusOr<SecretKey32> PairwiseMaskKey(ByteView own_private,
                                            ByteView peer_public, uint32_t u,
                                            uint32_t v, const SessionId& sid);

// y_u for the encoded input q (common/secure/fixed_point.h) of party u,
// its seed b, its masking private key, and the masking public keys of every
// other party of the roster (`peer_public` must not hold u). Until the
// last mask is in, the words are secret: they are built in a SecretWords,
// and only the finished upload is copied out.
absl::StatusOr<std::vector<uint32_t>> MaskInput(
    absl::Span<const uint32_t> q, uint32_t u, const SelfSeed& b,
    ByteView own_private, const std::map<uint32_t, Key32>& peer_public,
    const SessionId& sid);

// sum += y mod 2^32, word by word; the first upload sizes an empty sum.
// InvalidArgument when the sizes differ.
absl::Status AddMasked(std::vector<uint32_t>* sum,
                       absl::Span<const uint32_t> y);

// The sum of the survivors' q from the sum of their uploads: removes the
// self mask of every survivor (`survivor_seeds`, reconstructed) and, for
// every dropped party d (`dropped_private`, reconstructed) and survivor u,
// the stream of s_ud, from u's masking public key (`survivor_public`, which
// must name the same parties as `survivor_seeds` when anyone dropped).
// Refuses a party that is both survivor and dropped. The caller owns that
// survivors and dropped together are the roster of `sid`. `paired(d, u)`,
// when given, says whether u masked with d at all (neighbours in a SecAgg+
// graph); without it every pair did.
absl::StatusOr<std::vector<uint32_t>> Unmask(
    absl::Span<const uint32_t> masked_sum,
    const std::map<uint32_t, SelfSeed>& survivor_seeds,
    const std::map<uint32_t, SecretKey32>& dropped_private,
    const std::map<uint32_t, Key32>& survivor_public, const SessionId& sid,
    const std::function<bool(uint32_t, uint32_t)>& paired = nullptr);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_MASKS_H_
