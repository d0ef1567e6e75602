// The Python client's suite (python/tests, unittest) run from ctest, with
// Debian's python3, numpy and PyYAML: its codec must write the C++ codec's
// bytes and refuse what it refuses, word for word (tests/data/
// codec_vectors.json, held to the C++ codec by codec_vectors_test), and its
// results API reads a run folder that this build's `shefl run` writes; its
// gRPC modules (generated into build/python) register with a real
// coordinator under mutual TLS and a per-daemon token.
#include <catch2/catch.hpp>

#include <string>

#include "tests/test_support.h"

namespace shefl {
namespace {

TEST_CASE("the Python client's unittest suite passes against the shared vectors") {
  const std::string root = SHEFL_SOURCE_DIR;
  auto r = testing::RunProcess({"/usr/bin/env", "PYTHONPATH=" + root + "/python:" + SHEFL_BINARY_DIR + "/python",
                                "SHEFL_BIN_DIR=" + testing::BinDir(),
                                "/usr/bin/python3", "-m", "unittest", "discover", "-v", "-s",
                                root + "/python/tests", "-t", root + "/python/tests"},
                               600);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // Ran something: unittest prints "Ran N tests" and "OK".
  CHECK_THAT(r.output, Catch::Contains("test_refusals_say_what_the_cpp_decoder_says"));
  CHECK_THAT(r.output, Catch::Contains("test_a_finished_run_reads_whole"));
  CHECK_THAT(r.output, Catch::Contains("test_a_registration_gets_a_session_clients_and_the_config"));
  CHECK_THAT(r.output, Catch::Contains("\nOK"));
}

}  // namespace
}  // namespace shefl
