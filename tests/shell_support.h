// What the tests that drive containers share (containers_test,
// lab_systemd_test): a shell command with a time limit, and seconds since
// a moment. Header-only, so only its users rebuild when it changes.
#ifndef SHEFL_TESTS_SHELL_SUPPORT_H_
#define SHEFL_TESTS_SHELL_SUPPORT_H_

#include <chrono>
#include <string>

#include "tests/test_support.h"

namespace shefl::testing {

// `cmd` run by /bin/sh; its exit code and output (stdout and stderr).
inline ProcessResult Sh(const std::string& cmd, double timeout_s) {
  return RunProcess({"/bin/sh", "-c", cmd}, timeout_s);
}

inline double SecondsSince(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_SHELL_SUPPORT_H_
