#include "common/secure/share_box.h"

#include <openssl/rand.h>

#include <utility>

#include "common/core/status_macros.h"
#include "common/secure/aes_gcm.h"
#include "common/secure/hkdf.h"
#include "common/secure/openssl_util.h"
#include "common/secure/x25519.h"

namespace shefl {

namespace {

constexpr char kEncInfo[] = "shefl enc";
constexpr size_t kSeedBytes = 16;
constexpr size_t kKeyBytes = 32;
static_assert(kPeerSharesBytes ==
              ShamirShareBytes(kSeedBytes) + ShamirShareBytes(kKeyBytes));

Bytes Aad(const SessionId& sid, uint32_t from, uint32_t to) {
  Bytes aad;
  AppendBytes(&aad, sid);
  AppendBe32(&aad, from);
  AppendBe32(&aad, to);
  return aad;
}

}  // namespace

SecretBytes PackPeerShares(const PeerShares& shares) {
  const size_t seed_size = 4 + 8 * shares.self_seed.y.size();
  SecretBytes out(seed_size + 4 + 8 * shares.mask_private.y.size());
  // The sizes are the shares' own, so neither write can fail.
  WriteShamirShare(shares.self_seed, out.span().subspan(0, seed_size))
      .IgnoreError();
  WriteShamirShare(shares.mask_private, out.span().subspan(seed_size))
      .IgnoreError();
  return out;
}

absl::StatusOr<PeerShares> UnpackPeerShares(ByteView plaintext) {
  const size_t seed_size = ShamirShareBytes(kSeedBytes);
  if (plaintext.size() != seed_size + ShamirShareBytes(kKeyBytes))
    return absl::InvalidArgumentError("peer shares: wrong size");
  SHEFL_ASSIGN_OR_RETURN(
      ShamirShare seed,
      ParseShamirShare(plaintext.subspan(0, seed_size), kSeedBytes));
  SHEFL_ASSIGN_OR_RETURN(
      ShamirShare key,
      ParseShamirShare(plaintext.subspan(seed_size), kKeyBytes));
  if (seed.x != key.x)
    return absl::InvalidArgumentError(
        "peer shares: the two shares differ in x");
  return PeerShares{std::move(seed), std::move(key)};
}

absl::StatusOr<SecretKey32> ShareBoxKey(ByteView own_private,
                                        ByteView peer_public,
                                        const SessionId& sid) {
  SHEFL_ASSIGN_OR_RETURN(SecretKey32 shared,
                         X25519SharedSecret(own_private, peer_public));
  return HkdfSha256Key(shared, sid, AsBytes(kEncInfo));
}

absl::StatusOr<Bytes> SealShareBox(ByteView plaintext, const SessionId& sid,
                                   uint32_t from, uint32_t to,
                                   ByteView from_private, ByteView to_public) {
  SHEFL_ASSIGN_OR_RETURN(SecretKey32 key,
                         ShareBoxKey(from_private, to_public, sid));
  // The key serves both directions and every box of the pair, so nonces
  // are random (96 bits: no collision among a session's few boxes). They
  // are public, so the public generator makes them.
  Bytes box(kGcmNonceBytes);
  if (RAND_bytes(box.data(), static_cast<int>(box.size())) != 1)
    return secure_internal::OpenSslError("share box nonce");
  SHEFL_ASSIGN_OR_RETURN(Bytes sealed,
                         AesGcmSeal(key, box, plaintext, Aad(sid, from, to)));
  AppendBytes(&box, sealed);
  return box;
}

absl::StatusOr<SecretBytes> OpenShareBox(ByteView box, const SessionId& sid,
                                         uint32_t from, uint32_t to,
                                         ByteView to_private,
                                         ByteView from_public) {
  if (box.size() < kGcmNonceBytes + kGcmTagBytes)
    return absl::DataLossError("share box: shorter than nonce and tag");
  SHEFL_ASSIGN_OR_RETURN(SecretKey32 key,
                         ShareBoxKey(to_private, from_public, sid));
  return AesGcmOpen(key, box.subspan(0, kGcmNonceBytes),
                    box.subspan(kGcmNonceBytes), Aad(sid, from, to));
}

}  // namespace shefl
