// The coordinator's standard gRPC health service (grpc.health.v1), asked
// by the real `shefl health` over real sockets: SERVING from a running
// coordinator, in plaintext and under mutual TLS; a failure exit when
// nothing answers; a usage error named.
#include "tests/coordinator_harness.h"  // first: see its comment

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

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

// A connection that never speaks HTTP/2 is closed after the handshake
// timeout (10 s), instead of holding a descriptor for ever.
TEST_CASE("the plaintext health port closes a connection that never speaks") {
  testing::TempDir dir;
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  CoordinatorOptions o = PlainOptions(dir / "c.yaml", dir / "out");
  o.health_listen = "127.0.0.1:0";
  RunningCoordinator c(o);
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  const timeval wait{25, 0};  // a recv that times out is not a close
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(c.coordinator->health_port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  const auto start = std::chrono::steady_clock::now();
  char byte;
  ssize_t n = 1;
  while (n > 0) n = ::recv(fd, &byte, 1, 0);  // any preface, then the close
  const bool closed = n == 0 || errno == ECONNRESET;
  const double waited = std::chrono::duration<double>(
                            std::chrono::steady_clock::now() - start).count();
  ::close(fd);
  INFO("recv ended after " << waited << " s");
  CHECK(closed);
  CHECK(waited < 20);
}

}  // namespace
}  // namespace shefl
