// deploy/compose checked without a docker engine: Debian's docker-compose
// accepts the file (`config`, every profile), and every flag its commands
// and healthchecks pass to our binaries is one those binaries document (a
// renamed flag would leave a testbed that never starts).
#include <regex>
#include <set>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::BinDir;
using testing::RunProcess;

const std::string kCompose =
    std::string(SHEFL_SOURCE_DIR) + "/deploy/compose/docker-compose.yml";

TEST_CASE("docker-compose accepts the testbed with and without the gpu profile") {
  REQUIRE(RunProcess({"/usr/bin/docker-compose", "version"}, 60).exit_code == 0);
  auto plain = RunProcess({"/usr/bin/docker-compose", "-f", kCompose, "config"}, 120);
  INFO(plain.output);
  REQUIRE(plain.exit_code == 0);
  for (const char* s : {"coordinator:", "daemon:", "auto:10", "prometheus:", "grafana:",
                        "healthcheck:", "restart: on-failure", "results:"})
    CHECK_THAT(plain.output, Catch::Contains(s));
  auto gpu = RunProcess({"/usr/bin/docker-compose", "-f", kCompose, "--profile",
                         "gpu", "config"},
                        120);
  INFO(gpu.output);
  REQUIRE(gpu.exit_code == 0);
  CHECK_THAT(gpu.output, Catch::Contains("daemon-gpu:"));
  CHECK_THAT(gpu.output, Catch::Contains("driver: nvidia"));
  // The GPU daemon asks for free clients like the CPU ones (a fixed range
  // collided with theirs), under its own certificate and token.
  const std::string gpu_daemon = gpu.output.substr(gpu.output.find("daemon-gpu:"));
  const std::string gpu_command = gpu_daemon.substr(0, gpu_daemon.find("deploy:"));
  CHECK_THAT(gpu_command, Catch::Contains("auto:10"));
  CHECK_THAT(gpu_command, Catch::Contains("/run/secrets/gpu_cert"));
  CHECK_THAT(gpu_command, Catch::Contains("/run/secrets/gpu_token"));
  // What goes into the containers never includes the CA's key.
  CHECK_THAT(gpu.output, !Catch::Contains("ca.key"));
  CHECK_THAT(gpu.output, Catch::Contains("pki/client-1.pem"));
}

TEST_CASE("every flag the testbed passes to shefl binaries is one they document") {
  std::string usage;
  for (const std::vector<std::string>& argv :
       std::vector<std::vector<std::string>>{{BinDir() + "/shefl-coordinator", "--help"},
                                             {BinDir() + "/shefl-client", "--help"},
                                             {BinDir() + "/shefl", "health", "--help"},
                                             {BinDir() + "/shefl", "certs", "--help"}})
    usage += RunProcess(argv, 60).output;
  const std::string text = testing::ReadFile(kCompose);
  std::set<std::string> flags;
  const std::regex flag("--[a-z][a-z-]*[a-z]\\b(?![.=])");
  for (std::sregex_iterator it(text.begin(), text.end(), flag), end; it != end; ++it)
    flags.insert(it->str());
  for (const char* own : {"--profile", "--scale"})  // docker-compose's, in comments
    flags.erase(own);
  CHECK(flags.size() >= 15u);
  for (const std::string& f : flags) {
    INFO(f);
    CHECK(usage.find(f) != std::string::npos);
  }
}

}  // namespace
}  // namespace shefl
