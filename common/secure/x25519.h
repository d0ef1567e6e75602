// X25519 (RFC 7748) key agreement through OpenSSL's EVP interface. A party
// of secure aggregation holds two key pairs: one whose agreements key the
// share boxes, one whose agreements seed the pairwise masks. Keys are raw
// 32-byte strings (the RFC's little-endian encodings); the private key is
// kept as drawn, and X25519 clamps it when it is used, so the Shamir shares
// of a private key (common/secure/shamir.h) carry those 32 bytes exactly.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_X25519_H_
#define SHEFL_COMMON_SECURE_X25519_H_

#include "absl/status/statusor.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"

namespace shefl {

// Move-only: the private key is a Secret, wiped when the pair goes.
struct X25519KeyPair {
  SecretKey32 private_key;
  Key32 public_key{};
};

// A new pair: 32 bytes from OpenSSL's private generator as the private key.
absl::StatusOr<X25519KeyPair> GenerateX25519KeyPair();

// The pair of a given private key (32 bytes, else InvalidArgument): what a
// coordinator that reconstructed a dropped party's key recomputes.
absl::StatusOr<X25519KeyPair> X25519KeyPairFromPrivate(ByteView private_key);

// X25519(private_key, peer_public): 32 bytes both sides compute alike.
// An all-zero result means the peer's key has small order, so the secret
// would be known to anyone; that is refused (InvalidArgument), as RFC 7748
// section 6.1 allows, rather than keying masks with it.
absl::StatusOr<SecretKey32> X25519SharedSecret(ByteView private_key,
                                               ByteView peer_public);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_X25519_H_
