#include "common/secure/hkdf.h"

#include <openssl/core_names.h>
#include <openssl/kdf.h>
#include <openssl/params.h>

#include "common/core/status_macros.h"
#include "common/secure/openssl_util.h"

namespace shefl {

namespace {

constexpr size_t kMaxOutput = 255 * 32;
constexpr size_t kMaxInfo = 1024;

// OSSL_PARAM takes non-const pointers; OpenSSL only reads them.
void* Mutable(ByteView v) { return const_cast<uint8_t*>(v.data()); }

}  // namespace

absl::StatusOr<SecretBytes> HkdfSha256(ByteView ikm, ByteView salt,
                                       ByteView info, size_t length) {
  if (ikm.empty())
    return absl::InvalidArgumentError("HKDF: empty input keying material");
  if (length == 0 || length > kMaxOutput)
    return absl::InvalidArgumentError("HKDF: length must be 1 to 8160 bytes");
  if (info.size() > kMaxInfo)
    return absl::InvalidArgumentError("HKDF: info longer than 1024 bytes");
  secure_internal::KdfPtr kdf(EVP_KDF_fetch(nullptr, "HKDF", nullptr));
  if (!kdf) return secure_internal::OpenSslError("HKDF fetch");
  secure_internal::KdfCtxPtr ctx(EVP_KDF_CTX_new(kdf.get()));
  if (!ctx) return secure_internal::OpenSslError("HKDF context");
  char digest[] = "SHA256";
  OSSL_PARAM params[5];
  OSSL_PARAM* p = params;
  *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0);
  *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, Mutable(ikm),
                                           ikm.size());
  // An empty salt is the RFC's default, hash-length zeros, given
  // explicitly so as not to depend on how the library treats a null key.
  // HMAC pads a key with zeros, so either gives the same output.
  static const uint8_t kZeroSalt[32] = {};
  const ByteView s =
      salt.empty() ? ByteView(kZeroSalt, sizeof kZeroSalt) : salt;
  *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, Mutable(s),
                                           s.size());
  if (!info.empty())
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, Mutable(info),
                                             info.size());
  *p = OSSL_PARAM_construct_end();
  SecretBytes out(length);
  if (EVP_KDF_derive(ctx.get(), out.data(), out.size(), params) != 1)
    return secure_internal::OpenSslError("HKDF derive");
  return out;
}

absl::StatusOr<SecretKey32> HkdfSha256Key(ByteView ikm, ByteView salt,
                                          ByteView info) {
  SHEFL_ASSIGN_OR_RETURN(SecretBytes okm, HkdfSha256(ikm, salt, info, 32));
  return SecretKey32::CopyOf(okm);
}

}  // namespace shefl
