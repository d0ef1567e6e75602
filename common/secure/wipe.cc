#include "common/secure/wipe.h"

#include <openssl/crypto.h>

namespace shefl {

void WipeBytes(void* p, size_t n) {
  if (p != nullptr && n > 0) OPENSSL_cleanse(p, n);
}

}  // namespace shefl
