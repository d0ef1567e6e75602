// Holds the sources to the C++ API that LibTorch 1.13 (Debian 12, the
// build) and 2.x (the GPU machines) share: every LibTorch-using source of
// common/data, common/learn, common/learn_stacked, server/round, client/
// and the coordinator compiles with `g++ -std=gnu++20 -fsyntax-only`
// against Debian sid's libtorch-dev headers (tests/torch2_check.py, each
// file's flags from the build's compile database), which scripts/setup.sh
// puts in build/libtorch2. Without those headers the test fails, saying
// how to get them: a CI machine that lost them must not pass silently.
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

const std::string kHeaders = std::string(SHEFL_BINARY_DIR) + "/libtorch2";

ProcessResult Check(const std::string& headers, const std::vector<std::string>& files) {
  std::vector<std::string> argv = {
      "/usr/bin/python3", std::string(SHEFL_SOURCE_DIR) + "/tests/torch2_check.py",
      std::string(SHEFL_BINARY_DIR) + "/compile_commands.json", SHEFL_SOURCE_DIR, headers};
  argv.insert(argv.end(), files.begin(), files.end());
  return RunProcess(argv, 1500);
}

TEST_CASE("the LibTorch-using sources compile against LibTorch 2.x's headers") {
  const ProcessResult r = Check(kHeaders, {});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("compiles against LibTorch 2.") != std::string::npos);
}

TEST_CASE("a source that only LibTorch 1.13 accepts fails the check, named with its error") {
  // at::NoGradGuard through <ATen/ATen.h> alone: 1.13 declares it there,
  // 2.x does not (common/learn/fens_aggregators.cc did this once).
  TempDir dir;
  const std::string bad = dir / "old_guard.cc";
  WriteFile(bad, R"(#include <ATen/ATen.h>
int Use() { at::NoGradGuard no_grad; return 0; }
)");
  const ProcessResult r = Check(kHeaders, {bad});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("fails to compile against LibTorch") != std::string::npos);
  CHECK(r.output.find("old_guard.cc:2:") != std::string::npos);
  CHECK(r.output.find("error: 'NoGradGuard' is not a member of 'at'") != std::string::npos);
}

TEST_CASE("without the 2.x headers the check fails and says how to get them") {
  TempDir empty;
  const ProcessResult r = Check(empty.path(), {});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("no LibTorch 2.x headers in " + empty.path()) != std::string::npos);
  CHECK(r.output.find("scripts/fetch_libtorch2.sh") != std::string::npos);
}

}  // namespace
}  // namespace shefl
