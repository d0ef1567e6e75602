#include "common/secure/x25519.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>

#include "common/core/status_macros.h"
#include "common/secure/openssl_util.h"

namespace shefl {

namespace {

using secure_internal::OpenSslError;
using secure_internal::PkeyCtxPtr;
using secure_internal::PkeyPtr;

absl::StatusOr<PkeyPtr> PrivateKey(ByteView raw) {
  if (raw.size() != 32)
    return absl::InvalidArgumentError("X25519 private key: expected 32 bytes");
  PkeyPtr key(EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, nullptr, raw.data(),
                                           raw.size()));
  if (!key) return OpenSslError("X25519 private key");
  return key;
}

absl::StatusOr<PkeyPtr> PublicKey(ByteView raw) {
  if (raw.size() != 32)
    return absl::InvalidArgumentError("X25519 public key: expected 32 bytes");
  PkeyPtr key(EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, nullptr, raw.data(),
                                          raw.size()));
  if (!key) return OpenSslError("X25519 public key");
  return key;
}

}  // namespace

absl::StatusOr<X25519KeyPair> GenerateX25519KeyPair() {
  SecretKey32 raw;
  SHEFL_RETURN_IF_ERROR(secure_internal::PrivateRandom(raw.data(), raw.size()));
  return X25519KeyPairFromPrivate(raw);
}

absl::StatusOr<X25519KeyPair> X25519KeyPairFromPrivate(ByteView private_key) {
  SHEFL_ASSIGN_OR_RETURN(PkeyPtr key, PrivateKey(private_key));
  X25519KeyPair pair;
  std::copy(private_key.begin(), private_key.end(), pair.private_key.data());
  size_t len = pair.public_key.size();
  if (EVP_PKEY_get_raw_public_key(key.get(), pair.public_key.data(), &len) !=
          1 ||
      len != pair.public_key.size())
    return OpenSslError("X25519 public key of a private key");
  return pair;
}

absl::StatusOr<SecretKey32> X25519SharedSecret(ByteView private_key,
                                               ByteView peer_public) {
  SHEFL_ASSIGN_OR_RETURN(PkeyPtr own, PrivateKey(private_key));
  SHEFL_ASSIGN_OR_RETURN(PkeyPtr peer, PublicKey(peer_public));
  SecretKey32 secret;
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new(own.get(), nullptr));
  size_t len = secret.size();
  if (!ctx || EVP_PKEY_derive_init(ctx.get()) != 1 ||
      EVP_PKEY_derive_set_peer(ctx.get(), peer.get()) != 1)
    return OpenSslError("X25519 derive set-up");
  // OpenSSL 3 itself refuses an all-zero result, with a generic "failed
  // during derivation"; the keys were valid 32-byte strings, so that is
  // the one cause left, and the message says so. The check after it holds
  // whatever the library version does.
  if (EVP_PKEY_derive(ctx.get(), secret.data(), &len) != 1 ||
      len != secret.size()) {
    OpenSslError("X25519 derive").IgnoreError();
    return absl::InvalidArgumentError(
        "X25519: the agreement failed: the peer's public key has small "
        "order (the shared secret would be all zeros)");
  }
  // In constant time: how many bytes are zero must not show in the timing.
  static const Key32 kZero{};
  if (CRYPTO_memcmp(secret.data(), kZero.data(), secret.size()) == 0)
    return absl::InvalidArgumentError(
        "X25519: the shared secret is all zeros (the peer's public key has "
        "small order)");
  return secret;
}

}  // namespace shefl
