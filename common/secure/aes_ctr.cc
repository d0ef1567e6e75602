#include "common/secure/aes_ctr.h"

#include <openssl/evp.h>

#include <algorithm>
#include <climits>

#include "common/core/status_macros.h"
#include "common/secure/openssl_util.h"

namespace shefl {

absl::StatusOr<SecretBytes> AesCtrKeystream(ByteView key, ByteView iv,
                                            size_t n) {
  if (key.size() != 32)
    return absl::InvalidArgumentError("AES-256-CTR: key must be 32 bytes");
  if (iv.size() != kAesCtrIvBytes)
    return absl::InvalidArgumentError("AES-256-CTR: IV must be 16 bytes");
  secure_internal::CipherCtxPtr ctx(EVP_CIPHER_CTX_new());
  if (!ctx || EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_ctr(), nullptr,
                                 key.data(), iv.data()) != 1)
    return secure_internal::OpenSslError("AES-256-CTR init");
  // The keystream is the encryption of zeros, done in place; counter mode
  // allows it. EVP takes int lengths, hence the steps.
  SecretBytes out(n);
  size_t done = 0;
  while (done < n) {
    const int step = static_cast<int>(std::min<size_t>(n - done, 1 << 20));
    int len = 0;
    if (EVP_EncryptUpdate(ctx.get(), out.data() + done, &len, out.data() + done,
                          step) != 1 ||
        len != step)
      return secure_internal::OpenSslError("AES-256-CTR");
    done += static_cast<size_t>(step);
  }
  return out;
}

absl::StatusOr<SecretWords> AesCtrWords(ByteView key, size_t n_words) {
  if (n_words > SIZE_MAX / 4)
    return absl::InvalidArgumentError("AES-256-CTR: stream too long");
  static const uint8_t kZeroIv[kAesCtrIvBytes] = {};
  SHEFL_ASSIGN_OR_RETURN(
      SecretBytes bytes,
      AesCtrKeystream(key, ByteView(kZeroIv, sizeof kZeroIv), 4 * n_words));
  SecretWords words(n_words);
  const uint8_t* p = bytes.data();
  for (size_t i = 0; i < n_words; ++i, p += 4)
    words[i] = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
               static_cast<uint32_t>(p[2]) << 16 |
               static_cast<uint32_t>(p[3]) << 24;
  return words;
}

}  // namespace shefl
