#include "common/secure/sha256.h"

#include <openssl/evp.h>

#include "common/secure/openssl_util.h"

namespace shefl {

absl::StatusOr<Key32> Sha256(ByteView data) {
  Key32 digest;
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest.data(), &len, EVP_sha256(),
                 nullptr) != 1 ||
      len != digest.size())
    return secure_internal::OpenSslError("SHA-256");
  return digest;
}

}  // namespace shefl
