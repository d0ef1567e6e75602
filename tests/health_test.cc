// The coordinator's standard gRPC health service (grpc.health.v1), asked
// by the real `shefl health` over real sockets: SERVING from a running
// coordinator, in plaintext and under mutual TLS; a failure exit when
// nothing answers; a usage error named.
#include "tests/coordinator_harness.h"  // first: see its comment

#include <catch2/catch.hpp>

#include "tests/test_support.h"

namespace shefl {
namespace {

using testing::BinDir;
using testing::RunProcess;

TEST_CASE("shefl health says SERVING for a running coordinator and exits 0") {
  Harness h("");
  const std::string target =
      "127.0.0.1:" + std::to_string(h.coordinator->listening_port());
  auto r = RunProcess({BinDir() + "/shefl", "health", target, "--insecure"}, 60);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains(target + ": SERVING"));
  // A service name the coordinator does not serve is not healthy.
  auto other = RunProcess({BinDir() + "/shefl", "health", target, "--insecure",
                           "--service", "no.such.Service"},
                          60);
  INFO(other.output);
  CHECK(other.exit_code == 1);
}

TEST_CASE("shefl health exits 1 when nothing answers and 2 on a usage error") {
  const int port = testing::FreePort();  // nothing listens there
  auto r = RunProcess({BinDir() + "/shefl", "health",
                       "127.0.0.1:" + std::to_string(port), "--insecure",
                       "--timeout-s", "1"},
                      60);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("no answer"));
  auto bad = RunProcess({BinDir() + "/shefl", "health"}, 60);
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("HOST:PORT is required"));
  auto flag = RunProcess({BinDir() + "/shefl", "health", "x:1", "--timeout-s", "-3"}, 60);
  CHECK(flag.exit_code == 2);
  CHECK_THAT(flag.output, Catch::Contains("--timeout-s '-3'"));
}

TEST_CASE("shefl health checks the coordinator under mutual TLS and on its plaintext health port") {
  testing::TempDir dir;
  auto certs = RunProcess({BinDir() + "/shefl", "certs", "--out", dir / "pki",
                           "--hosts", "127.0.0.1,localhost", "--clients", "1"},
                          60);
  REQUIRE(certs.exit_code == 0);
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  const std::string pki = dir / "pki";
  CoordinatorOptions o = MtlsOptions(dir / "c.yaml", dir / "out", pki);
  o.health_listen = "127.0.0.1:0";
  auto c = Coordinator::Create(o);
  INFO(c.status());
  REQUIRE(c.ok());
  std::unique_ptr<Coordinator> coordinator = std::move(*c);
  std::thread runner([&] { (void)coordinator->Run(); });
  const std::string target =
      "127.0.0.1:" + std::to_string(coordinator->listening_port());
  // The plaintext health port answers without any certificate (what a
  // Kubernetes gRPC probe does), and serves nothing else.
  const std::string health =
      "127.0.0.1:" + std::to_string(coordinator->health_port());
  auto probe = RunProcess({BinDir() + "/shefl", "health", health, "--insecure"}, 60);
  auto plain_main = RunProcess({BinDir() + "/shefl", "health", target, "--insecure",
                                "--timeout-s", "2"},
                               60);
  auto ok = RunProcess({BinDir() + "/shefl", "health", target, "--tls-ca",
                        pki + "/ca.pem", "--tls-cert", pki + "/client-0.pem",
                        "--tls-key", pki + "/client-0.key"},
                       60);
  // Without a client certificate the handshake fails: no answer.
  auto refused = RunProcess({BinDir() + "/shefl", "health", target, "--tls-ca",
                             pki + "/ca.pem", "--timeout-s", "2"},
                            60);
  coordinator->RequestStop();
  runner.join();
  INFO(ok.output << refused.output);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.output, Catch::Contains("SERVING"));
  CHECK(refused.exit_code == 1);
  INFO(probe.output << plain_main.output);
  CHECK(probe.exit_code == 0);
  CHECK_THAT(probe.output, Catch::Contains("SERVING"));
  CHECK(plain_main.exit_code == 1);  // the main port stays TLS-only
}

}  // namespace
}  // namespace shefl
