// TLS, mutual TLS, the token and certificate identities, against a real
// coordinator in this process over real sockets on 127.0.0.1, with a PKI
// made by the real `shefl certs`. Every refused attempt must leave the
// registry and the books as they were. The test prints the matrix.
#include "tests/coordinator_harness.h"

#include "common/net/tls.h"

#include <cstdio>

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
  const std::string pki = dir / "pki", other = dir / "other";
  const std::string expired = dir / "expired";
  MakePki(pki);
  MakePki(other);
  // A client certificate of the right CA whose validity ended yesterday.
  REQUIRE(testing::MakeExpiredClient(pki, expired).ok());
  const std::string token = ReadFile(pki + "/token").substr(0, 64);
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

}  // namespace
}  // namespace shefl
