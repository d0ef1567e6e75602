#include "common/secure/aes_gcm.h"

#include <openssl/evp.h>

#include <algorithm>
#include <climits>

#include "common/core/status_macros.h"
#include "common/secure/openssl_util.h"

namespace shefl {

namespace {

using secure_internal::CipherCtxPtr;
using secure_internal::OpenSslError;

absl::Status CheckSizes(ByteView key, ByteView nonce, size_t text,
                        ByteView aad) {
  if (key.size() != 32)
    return absl::InvalidArgumentError("AES-256-GCM: key must be 32 bytes");
  if (nonce.size() != kGcmNonceBytes)
    return absl::InvalidArgumentError("AES-256-GCM: nonce must be 12 bytes");
  if (text > INT_MAX / 2 || aad.size() > INT_MAX / 2)
    return absl::InvalidArgumentError("AES-256-GCM: input too long");
  return absl::OkStatus();
}

// A context keyed for `encrypt`ion or decryption with the AAD fed in.
absl::StatusOr<CipherCtxPtr> Start(bool encrypt, ByteView key, ByteView nonce,
                                   ByteView aad) {
  CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  const int enc = encrypt ? 1 : 0;
  if (!ctx ||
      EVP_CipherInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, nullptr, nullptr,
                        enc) != 1 ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_IVLEN,
                          static_cast<int>(nonce.size()), nullptr) != 1 ||
      EVP_CipherInit_ex(ctx.get(), nullptr, nullptr, key.data(), nonce.data(),
                        enc) != 1)
    return OpenSslError("AES-256-GCM init");
  int len = 0;
  if (!aad.empty() && EVP_CipherUpdate(ctx.get(), nullptr, &len, aad.data(),
                                       static_cast<int>(aad.size())) != 1)
    return OpenSslError("AES-256-GCM AAD");
  return ctx;
}

}  // namespace

absl::StatusOr<Bytes> AesGcmSeal(ByteView key, ByteView nonce,
                                 ByteView plaintext, ByteView aad) {
  SHEFL_RETURN_IF_ERROR(CheckSizes(key, nonce, plaintext.size(), aad));
  SHEFL_ASSIGN_OR_RETURN(CipherCtxPtr ctx, Start(true, key, nonce, aad));
  Bytes out(plaintext.size() + kGcmTagBytes);
  int len = 0, tail = 0;
  if (!plaintext.empty() &&
      EVP_EncryptUpdate(ctx.get(), out.data(), &len, plaintext.data(),
                        static_cast<int>(plaintext.size())) != 1)
    return OpenSslError("AES-256-GCM encrypt");
  if (EVP_EncryptFinal_ex(ctx.get(), out.data() + len, &tail) != 1 ||
      static_cast<size_t>(len + tail) != plaintext.size() ||
      EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kGcmTagBytes,
                          out.data() + plaintext.size()) != 1)
    return OpenSslError("AES-256-GCM tag");
  return out;
}

absl::StatusOr<SecretBytes> AesGcmOpen(ByteView key, ByteView nonce,
                                       ByteView sealed, ByteView aad) {
  if (sealed.size() < kGcmTagBytes)
    return absl::DataLossError("AES-256-GCM: shorter than its tag");
  const size_t n = sealed.size() - kGcmTagBytes;
  SHEFL_RETURN_IF_ERROR(CheckSizes(key, nonce, n, aad));
  SHEFL_ASSIGN_OR_RETURN(CipherCtxPtr ctx, Start(false, key, nonce, aad));
  // Wiped by its type on every return below that does not hand it out.
  SecretBytes out(n);
  int len = 0, tail = 0;
  if (n > 0 && EVP_DecryptUpdate(ctx.get(), out.data(), &len, sealed.data(),
                                 static_cast<int>(n)) != 1)
    return OpenSslError("AES-256-GCM decrypt");
  // The tag is checked only at the end; until then `out` holds
  // unauthenticated plaintext, which must not leave this function.
  uint8_t tag[kGcmTagBytes];
  std::copy(sealed.end() - kGcmTagBytes, sealed.end(), tag);
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kGcmTagBytes,
                          tag) != 1)
    return OpenSslError("AES-256-GCM set tag");
  if (EVP_DecryptFinal_ex(ctx.get(), out.data() + len, &tail) != 1) {
    OpenSslError("AES-256-GCM verify").IgnoreError();  // clears the queue
    return absl::DataLossError(
        "AES-256-GCM: authentication failed (ciphertext, tag, nonce, AAD or "
        "key differ from what was sealed)");
  }
  return out;
}

}  // namespace shefl
