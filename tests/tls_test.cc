// TLS, mutual TLS, the token and certificate identities, against a real
// coordinator in this process over real sockets on 127.0.0.1, with a PKI
// made by the real `shefl certs`. Every refused attempt must leave the
// registry and the books as they were. The test prints the matrix.
#include "tests/coordinator_harness.h"

#include "common/net/tls.h"

#include <signal.h>

#include <cstdio>
#include <map>

#include "common/net/connect_failure.h"
#include "tests/pki_support.h"

namespace shefl {
namespace {

using testing::BinDir;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;


// A PKI made by the real `shefl certs`: client-0 and client-1, a token.
void MakePki(const std::string& dir) {
  const absl::Status made = testing::MakeCertsWithCli(dir, 2);
  INFO(made);
  REQUIRE(made.ok());
}

// The run's PKI, a second one (another CA), an expired client-0 of the
// first CA (its validity ended yesterday), and the first's token.
struct Pkis {
  std::string pki, other, expired, token;
};
Pkis MakePkis(const TempDir& dir) {
  Pkis k{dir / "pki", dir / "other", dir / "expired", ""};
  MakePki(k.pki);
  MakePki(k.other);
  REQUIRE(testing::MakeExpiredClient(k.pki, k.expired).ok());
  k.token = ReadFile(k.pki + "/token").substr(0, 64);
  return k;
}

// A coordinator in this process under mutual TLS and the token of `pki`,
// and what its books hold.
struct TlsCoordinator : RunningCoordinator {
  TlsCoordinator(const TempDir& dir, const std::string& pki)
      : RunningCoordinator(Options(dir, pki)) {}
  static CoordinatorOptions Options(const TempDir& dir, const std::string& pki) {
    testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
    return MtlsOptions(dir / "c.yaml", dir / "out", pki);
  }
  uint64_t booked() {
    const ByteCounts t = coordinator->state().ledger.Total();
    return t.payload_up + t.payload_down + t.control();
  }
};

// A peer: how it dials (tests/pki_support.h) and the token it presents.
struct Peer {
  std::string label;
  testing::DialAs dial;
  std::string token;
};

std::unique_ptr<v1::Coordinator::Stub> Dial(const std::string& target,
                                            const Peer& p) {
  auto stub = testing::DialCoordinator(target, p.dial);
  INFO(stub.status());
  REQUIRE(stub.ok());
  return std::move(*stub);
}

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    default: return "other";
  }
}

TEST_CASE("only peers with the CA's certificate and the token get in",
          "[tls]") {
  TempDir dir;
  const Pkis k = MakePkis(dir);
  const std::string &pki = k.pki, &other = k.other, &expired = k.expired;
  const std::string& token = k.token;
  TlsCoordinator c(dir, pki);

  const Peer good{"valid cert + token", testing::ClientOf(pki, 0), token};
  struct Row {
    Peer peer;
    grpc::StatusCode want;
  };
  std::vector<Row> rows;
  for (auto& [label, dial] : testing::HandshakeFailures(good.dial, other, expired))
    rows.push_back({{label, dial, token}, grpc::StatusCode::UNAVAILABLE});
  auto with = [&](std::string label, auto change, grpc::StatusCode want) {
    Peer p = good;
    p.label = std::move(label);
    change(p);
    rows.push_back({p, want});
  };
  with("wrong token", [](Peer& p) { p.token = std::string(64, 'f'); },
       grpc::StatusCode::UNAUTHENTICATED);
  with("no token", [](Peer& p) { p.token = ""; },
       grpc::StatusCode::UNAUTHENTICATED);

  const uint64_t booked = c.booked();
  std::printf("%-36s %-18s %s\n", "peer (Register)", "expected", "got");
  for (const Row& r : rows) {
    auto stub = Dial(c.target(), r.peer);
    const grpc::Status st = RegisterAs(*stub, "intruder", r.peer.token, 0, 7);
    std::printf("%-36s %-18s %s\n", r.peer.label.c_str(), CodeName(r.want),
                CodeName(st.error_code()));
    INFO(r.peer.label << ": " << st.error_message());
    CHECK(st.error_code() == r.want);
  }
  CHECK(c.coordinator->state().registry.Sessions().empty());
  CHECK(c.booked() == booked);

  std::string session;
  auto stub = Dial(c.target(), good);
  const grpc::Status ok = RegisterAs(*stub, "d0", token, 0, 3, &session);
  std::printf("%-36s %-18s %s\n", good.label.c_str(), "OK",
              CodeName(ok.error_code()));
  INFO(ok.error_message());
  CHECK(ok.ok());
  CHECK(c.booked() > booked);
}

TEST_CASE("under mutual TLS a name and its clients belong to one certificate",
          "[tls]") {
  TempDir dir;
  const std::string pki = dir / "pki";
  MakePki(pki);
  const std::string token = ReadFile(pki + "/token").substr(0, 64);
  TlsCoordinator c(dir, pki);
  const Peer d0{"client-0", testing::ClientOf(pki, 0), token};
  const Peer d1{"client-1", testing::ClientOf(pki, 1), token};
  auto s0 = Dial(c.target(), d0);
  auto s1 = Dial(c.target(), d1);

  std::string first;
  REQUIRE(RegisterAs(*s0, "daemon-0", token, 0, 3, &first).ok());
  // No feed is open, so only identity stands between client-1 and these.
  CHECK(RegisterAs(*s1, "daemon-0", token, 4, 7).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(RegisterAs(*s1, "squatter", token, 2, 5).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  auto owner = c.coordinator->state().registry.OwnerOf(2);
  REQUIRE(owner != nullptr);
  CHECK(owner->name == "daemon-0");
  CHECK(owner->session_id == first);
  CHECK(c.coordinator->state().registry.OwnerOf(5) == nullptr);
  // The same certificate may come back (a restart) and client-1 may take
  // clients nobody holds.
  std::string again;
  CHECK(RegisterAs(*s0, "daemon-0", token, 0, 3, &again).ok());
  CHECK(again != first);
  CHECK(RegisterAs(*s1, "daemon-1", token, 4, 7).ok());
}

TEST_CASE("a coordinator without TLS files or --insecure refuses to start",
          "[tls]") {
  TempDir dir;
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  auto r = RunProcess({BinDir() + "/shefl-coordinator", "--config",
                       dir / "c.yaml", "--listen", "127.0.0.1:0"},
                      60);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("--tls-cert"));
  CHECK_THAT(r.output, Catch::Contains("--insecure"));
  testing::WriteFile(dir / "short", "abc\n");
  auto t = RunProcess({BinDir() + "/shefl-coordinator", "--config",
                       dir / "c.yaml", "--insecure", "--token-file",
                       dir / "short"},
                      60);
  CHECK(t.exit_code == 1);
  CHECK_THAT(t.output, Catch::Contains("--token-file"));
  auto m = RunProcess({BinDir() + "/shefl-coordinator", "--config",
                       dir / "c.yaml", "--tls-cert", dir / "missing.pem",
                       "--tls-key", dir / "missing.key"},
                      60);
  CHECK(m.exit_code == 1);
  CHECK_THAT(m.output, Catch::Contains("missing.pem"));
}

TEST_CASE("a daemon's TLS mistakes are named with the flag to fix, not unreachable",
          "[tls]") {
  TempDir dir;
  const Pkis k = MakePkis(dir);
  const std::string &pki = k.pki, &other = k.other, &expired = k.expired;
  const std::string& token = k.token;
  TlsCoordinator c(dir, pki);
  // What each handshake failure against a mutual-TLS coordinator must read
  // as, from the message gRPC really gives.
  const std::map<std::string, std::pair<ConnectFailure, std::string>> want = {
      {"no cert", {ConnectFailure::kHandshakeRefused, "give --tls-cert and --tls-key"}},
      {"cert of other CA", {ConnectFailure::kHandshakeRefused, "--tls-client-ca"}},
      {"trusts other CA", {ConnectFailure::kUntrustedServer, "give --tls-ca"}},
      {"expired cert", {ConnectFailure::kHandshakeRefused, "--tls-client-ca"}},
      {"wrong host name", {ConnectFailure::kServerName, "--tls-server-name"}},
      {"plaintext", {ConnectFailure::kHandshakeRefused, "drop --insecure"}},
  };
  const testing::DialAs good = testing::ClientOf(pki, 0);
  for (auto& [label, dial] : testing::HandshakeFailures(good, other, expired)) {
    auto stub = testing::DialCoordinator(c.target(), dial);
    REQUIRE(stub.ok());
    const grpc::Status st = RegisterAs(**stub, "d", token, 0, 3);
    const TlsOptions tls = testing::TlsOf(dial);
    const ConnectFailure kind = ClassifyConnectFailure(st.error_message(), tls);
    const std::string said = ExplainConnectFailure(kind, tls);
    std::printf("%-20s %-60.60s -> %s\n", label.c_str(), st.error_message().c_str(),
                said.c_str());
    INFO(label << ": " << st.error_message() << " -> " << said);
    REQUIRE(want.count(label) == 1);
    CHECK(kind == want.at(label).first);
    CHECK_THAT(said, Catch::Contains(want.at(label).second));
  }
  // No --tls-ca: the system's CAs do not know the run's own CA.
  testing::DialAs system = good;
  system.ca = "";
  auto stub = testing::DialCoordinator(c.target(), system);
  REQUIRE(stub.ok());
  const grpc::Status st = RegisterAs(**stub, "d", token, 0, 3);
  INFO(st.error_message());
  const TlsOptions tls = testing::TlsOf(system);
  CHECK(ClassifyConnectFailure(st.error_message(), tls) ==
        ConnectFailure::kUntrustedServer);
  CHECK_THAT(ExplainConnectFailure(ConnectFailure::kUntrustedServer, tls),
             Catch::Contains("no --tls-ca"));
}

TEST_CASE("a TLS daemon against a plaintext coordinator, or none, is told which",
          "[tls]") {
  TempDir dir;
  const std::string pki = dir / "pki";
  MakePki(pki);
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  RunningCoordinator plain(PlainOptions(dir / "c.yaml", dir / "out"));
  const testing::DialAs tls_daemon = testing::ClientOf(pki, 0);
  auto stub = testing::DialCoordinator(plain.target(), tls_daemon);
  REQUIRE(stub.ok());
  const grpc::Status st = RegisterAs(**stub, "d", "", 0, 3);
  INFO(st.error_message());
  CHECK(st.error_code() == grpc::StatusCode::UNAVAILABLE);
  const TlsOptions tls = testing::TlsOf(tls_daemon);
  CHECK(ClassifyConnectFailure(st.error_message(), tls) ==
        ConnectFailure::kPlaintextServer);
  CHECK_THAT(ExplainConnectFailure(ConnectFailure::kPlaintextServer, tls),
             Catch::Contains("give this daemon --insecure"));
  // Nothing listening: still "unreachable".
  const std::string nowhere = "127.0.0.1:" + std::to_string(testing::FreePort());
  auto none = testing::DialCoordinator(nowhere, tls_daemon);
  REQUIRE(none.ok());
  const grpc::Status down = RegisterAs(**none, "d", "", 0, 3);
  INFO(down.error_message());
  CHECK(ClassifyConnectFailure(down.error_message(), tls) ==
        ConnectFailure::kUnreachable);
}

TEST_CASE("a plaintext shefl-client against a TLS coordinator logs what to change",
          "[tls]") {
  TempDir dir;
  const std::string pki = dir / "pki";
  MakePki(pki);
  TlsCoordinator c(dir, pki);
  const std::string log = dir / "daemon.log";
  const int pid = testing::Spawn(
      {BinDir() + "/shefl-client", "--coordinator", c.target(), "--clients", "0-1",
       "--out", dir / "d", "--threads", "1", "--insecure"},
      log);
  const bool said = testing::WaitUntil(
      [&] { return ReadFile(log).find("drop --insecure") != std::string::npos; }, 60);
  ::kill(-pid, SIGKILL);
  testing::WaitFor(pid, 10);
  INFO(ReadFile(log));
  CHECK(said);
  CHECK_THAT(ReadFile(log), !Catch::Contains("unreachable"));
}

}  // namespace
}  // namespace shefl
