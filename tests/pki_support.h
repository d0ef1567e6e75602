// Test PKIs beside the ones `shefl certs` makes.
#ifndef SHEFL_TESTS_PKI_SUPPORT_H_
#define SHEFL_TESTS_PKI_SUPPORT_H_

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "common/certs.h"

namespace shefl::testing {

// In `out`: client-0.pem/.key signed by the CA of `ca_dir` (its ca.pem and
// ca.key are copied) whose validity ended yesterday.
inline absl::Status MakeExpiredClient(const std::string& ca_dir,
                                      const std::string& out) {
  std::filesystem::create_directories(out);
  for (const char* f : {"ca.pem", "ca.key"})
    std::filesystem::copy_file(ca_dir + "/" + f, out + "/" + f);
  PkiOptions old;
  old.out_dir = out;
  old.clients = 1;
  old.reuse_ca = true;
  old.write_token = false;
  old.not_before_s = -2 * 86400;
  old.not_after_s = -86400;
  return MakeDevPki(old);
}

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_PKI_SUPPORT_H_
