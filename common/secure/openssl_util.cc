#include "common/secure/openssl_util.h"

#include <openssl/err.h>
#include <openssl/rand.h>

#include <climits>
#include <string>

#include "absl/strings/str_cat.h"

namespace shefl::secure_internal {

absl::Status OpenSslError(std::string_view what) {
  const unsigned long code = ERR_get_error();
  char buf[256] = "no error queued";
  if (code != 0) ERR_error_string_n(code, buf, sizeof buf);
  ERR_clear_error();
  return absl::InternalError(
      absl::StrCat(std::string(what), ": OpenSSL: ", buf));
}

absl::Status PrivateRandom(uint8_t* out, size_t n) {
  while (n > 0) {  // RAND_priv_bytes takes an int count
    const int step = n > INT_MAX ? INT_MAX : static_cast<int>(n);
    if (RAND_priv_bytes(out, step) != 1) return OpenSslError("RAND_priv_bytes");
    out += step;
    n -= static_cast<size_t>(step);
  }
  return absl::OkStatus();
}

}  // namespace shefl::secure_internal
