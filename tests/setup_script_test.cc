// scripts/setup.sh, the set-up behind the README's two commands: what it
// would install and build (SHEFL_SETUP_DRY_RUN=1, nothing changed), that
// the Python quick path gets what the Python client needs, and that on a
// system other than Debian 12 it stops before apt changes anything.
#include <string>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

const std::string kSetup = std::string(SHEFL_SOURCE_DIR) + "/scripts/setup.sh";

// `source scripts/setup.sh ARGS` as scripts/run.sh or test.sh does.
ProcessResult Setup(const std::string& env, const std::string& args) {
  return RunProcess({"/bin/bash", "-c",
                     env + " SHEFL_SETUP_DRY_RUN=1 bash -c 'source " + kSetup +
                         " " + args + "' 2>&1"},
                    60);
}

TEST_CASE("run mode installs and builds the Python client's needs only for --python-clients") {
  const auto plain = Setup("SHEFL_SETUP=run", "configs/quick.yaml");
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  CHECK_THAT(plain.output, Catch::Contains("libtorch-dev"));
  CHECK_THAT(plain.output, !Catch::Contains("python3-torch"));
  CHECK_THAT(plain.output, Catch::Contains("targets: shefl shefl-coordinator shefl-client\n"));

  const auto python = Setup("SHEFL_SETUP=run", "configs/quick.yaml --python-clients 0-4");
  INFO(python.output);
  REQUIRE(python.exit_code == 0);
  for (const char* p : {"python3-torch", "python3-grpcio", "python3-protobuf", "python3-numpy",
                        "python3-cryptography"})
    CHECK_THAT(python.output, Catch::Contains(p));
  CHECK_THAT(python.output, Catch::Contains("shefl_python_stubs"));
  CHECK(Setup("SHEFL_SETUP=run", "--python-clients=0-1").output.find("python3-torch") !=
        std::string::npos);

  const auto test = Setup("SHEFL_SETUP=test", "");
  INFO(test.output);
  CHECK_THAT(test.output, Catch::Contains("podman"));
  CHECK_THAT(test.output, Catch::Contains("targets: everything"));
}

TEST_CASE("on another system setup stops before apt, saying why, unless told to try") {
  TempDir dir;
  WriteFile(dir / "os-release", "ID=ubuntu\nVERSION_ID=\"22.04\"\n");
  const auto other = Setup("SHEFL_SETUP=run SHEFL_OS_RELEASE=" + (dir / "os-release"), "");
  INFO(other.output);
  CHECK(other.exit_code == 1);
  CHECK_THAT(other.output, Catch::Contains("this system is ubuntu 22.04"));
  CHECK_THAT(other.output, Catch::Contains("stopping before apt changes anything"));
  CHECK_THAT(other.output, !Catch::Contains("packages:"));
  const auto anyway =
      Setup("SHEFL_SETUP=run SHEFL_ANY_OS=1 SHEFL_OS_RELEASE=" + (dir / "os-release"), "");
  CHECK(anyway.exit_code == 0);
  CHECK_THAT(anyway.output, Catch::Contains("trying anyway"));
  // This machine is what the script is for.
  const auto here = Setup("SHEFL_SETUP=run", "");
  CHECK(here.exit_code == 0);
  CHECK_THAT(here.output, !Catch::Contains("this system is"));
}

}  // namespace
}  // namespace shefl
