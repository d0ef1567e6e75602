// Internal to common/secure: owning handles for the OpenSSL objects the
// primitives use, and the Status that reports an OpenSSL failure. Only the
// .cc files of this folder include it, so no header of the library exposes
// OpenSSL's types.
// Thread-safe: free functions; a handle is owned by one caller.
#ifndef SHEFL_COMMON_SECURE_OPENSSL_UTIL_H_
#define SHEFL_COMMON_SECURE_OPENSSL_UTIL_H_

#include <openssl/evp.h>
#include <openssl/kdf.h>

#include <memory>
#include <string_view>

#include "absl/status/status.h"

namespace shefl::secure_internal {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using PkeyCtxPtr =
    std::unique_ptr<EVP_PKEY_CTX, Deleter<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;
using CipherCtxPtr =
    std::unique_ptr<EVP_CIPHER_CTX,
                    Deleter<EVP_CIPHER_CTX, EVP_CIPHER_CTX_free>>;
using KdfPtr = std::unique_ptr<EVP_KDF, Deleter<EVP_KDF, EVP_KDF_free>>;
using KdfCtxPtr =
    std::unique_ptr<EVP_KDF_CTX, Deleter<EVP_KDF_CTX, EVP_KDF_CTX_free>>;

// Internal error naming `what` and the first error OpenSSL queued (the
// root cause; later entries are its callers' reports), then clears the
// queue so the next call starts clean.
absl::Status OpenSslError(std::string_view what);

// Fills `out` from OpenSSL's private DRBG, the generator meant for secret
// values (keys, seeds, polynomial coefficients), kept apart from the one
// that makes public nonces.
absl::Status PrivateRandom(uint8_t* out, size_t n);

}  // namespace shefl::secure_internal

#endif  // SHEFL_COMMON_SECURE_OPENSSL_UTIL_H_
