// Who a daemon is: with a list of per-daemon tokens, each token is its own
// identity, so a token holder cannot take another daemon's name, clients
// or session; under mutual TLS the identity is the certificate's CN, and a
// certificate whose SAN names another daemon is not that daemon. Real
// coordinators in this process over sockets on 127.0.0.1.
#include "tests/coordinator_harness.h"

#include "common/net/call_metadata.h"
#include "common/net/certs.h"
#include "common/net/token_book.h"
#include "tests/pki_support.h"

namespace shefl {
namespace {

using testing::ReadFile;
using testing::TempDir;

const std::string kA(32, 'a'), kB(32, 'b');

TEST_CASE("a token file is one shared token or NAME TOKEN lines", "[tokens]") {
  auto shared = TokenBook::Parse(kA + "\n", "t");
  REQUIRE(shared.ok());
  CHECK(shared->Identify(kA) == std::optional<std::string>("token"));
  CHECK_FALSE(shared->Identify(kB));

  auto own = TokenBook::Parse("# list\n\nd0 " + kA + "\nd1\t" + kB + "\n", "t");
  REQUIRE(own.ok());
  CHECK(own->size() == 2u);
  CHECK(own->Identify(kA) == std::optional<std::string>("token:d0"));
  CHECK(own->Identify(kB) == std::optional<std::string>("token:d1"));
  CHECK_FALSE(own->Identify(""));
  CHECK_FALSE(TokenBook().required());

  struct Bad {
    std::string text, says;
  };
  for (const Bad& b : std::vector<Bad>{
           {"d0 short\n", "line 1: a token needs at least 16"},
           {"d0 " + kA + "\nd0 " + kB + "\n", "line 2: the name 'd0'"},
           {"d0 " + kA + "\nd1 " + kA + "\n", "line 2: this token"},
           {kA + "\n" + kB + "\n", "line 2: a file of one shared token"},
           {"d0 " + kA + " extra\n", "line 1: expected TOKEN or NAME TOKEN"},
           {"# nothing\n", "no token"}}) {
    auto r = TokenBook::Parse(b.text, "tokens.txt");
    INFO(b.text);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message().find("'tokens.txt'") != std::string::npos);
    CHECK(r.status().message().find(b.says) != std::string::npos);
  }
}

grpc::StatusCode HeartbeatAs(v1::Coordinator::Stub& stub,
                             const std::string& token,
                             const std::string& session) {
  grpc::ClientContext ctx;
  ctx.AddMetadata(kTokenMetadata, token);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::HeartbeatRequest req;
  req.set_session_id(session);
  v1::HeartbeatReply reply;
  return stub.Heartbeat(&ctx, req, &reply).error_code();
}

TEST_CASE("with per-daemon tokens one token holder cannot act as another",
          "[tokens]") {
  TempDir dir;
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  testing::WriteFile(dir / "tokens", "d0 " + kA + "\nd1 " + kB + "\n");
  RunningCoordinator c(PlainOptions(dir / "c.yaml", dir / "out", dir / "tokens"));
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(c.target(), grpc::InsecureChannelCredentials()));

  std::string a_session;
  REQUIRE(RegisterAs(*stub, "daemon-0", kA, 0, 3, &a_session).ok());
  // No feed is open, so only the token's identity stands in the way.
  CHECK(RegisterAs(*stub, "daemon-0", kB, 4, 7).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(RegisterAs(*stub, "squatter", kB, 2, 5).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(RegisterAs(*stub, "d2", std::string(32, 'c'), 4, 7).error_code() ==
        grpc::StatusCode::UNAUTHENTICATED);
  CHECK(HeartbeatAs(*stub, kB, a_session) ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(HeartbeatAs(*stub, kA, a_session) == grpc::StatusCode::OK);
  auto owner = c.coordinator->state().registry.OwnerOf(2);
  REQUIRE(owner != nullptr);
  CHECK(owner->identity == "token:d0");
  CHECK(RegisterAs(*stub, "daemon-1", kB, 4, 7).ok());
  CHECK(c.coordinator->state().registry.OwnerOf(5)->identity == "token:d1");
  // The same token may come back (a restart) under its name.
  CHECK(RegisterAs(*stub, "daemon-0", kA, 0, 3).ok());
}

TEST_CASE("shefl certs writes each daemon a token and the coordinator their list",
          "[tokens]") {
  TempDir dir;
  REQUIRE(testing::MakeCertsWithCli(dir / "pki", 3).ok());
  auto book = TokenBook::Read(dir / "pki/tokens");
  INFO(book.status());
  REQUIRE(book.ok());
  CHECK(book->size() == 3u);
  for (int i = 0; i < 3; ++i) {
    auto own = ReadToken(dir / ("pki/client-" + std::to_string(i) + ".token"));
    REQUIRE(own.ok());
    CHECK(book->Identify(*own) ==
          std::optional<std::string>("token:client-" + std::to_string(i)));
  }
  // A daemon handed the list by mistake is told so.
  auto wrong = ReadToken(dir / "pki/tokens");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.status().message().find("holds its one token") !=
        std::string::npos);
}

TEST_CASE("under mutual TLS a SAN naming another daemon does not make its holder that daemon",
          "[tokens]") {
  TempDir dir;
  const std::string pki = dir / "pki", mallory = dir / "mallory";
  REQUIRE(testing::MakeCertsWithCli(pki, 1).ok());
  PkiOptions m;
  m.client_cn_prefix = "mallory-";
  m.client_alt_names = "DNS:shefl-client-0";
  REQUIRE(testing::MakeClientUnderCa(pki, mallory, m).ok());
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  RunningCoordinator c(MtlsOptions(dir / "c.yaml", dir / "out", pki));
  const std::string token = ReadFile(pki + "/token").substr(0, 64);

  auto honest = testing::DialCoordinator(c.target(), testing::ClientOf(pki, 0));
  auto thief = testing::DialCoordinator(c.target(), testing::ClientOf(mallory, 0));
  REQUIRE(honest.ok());
  REQUIRE(thief.ok());
  REQUIRE(RegisterAs(**honest, "daemon-0", token, 0, 3).ok());
  CHECK(c.coordinator->state().registry.OwnerOf(0)->identity ==
        "cert:shefl-client-0");
  CHECK(RegisterAs(**thief, "daemon-0", token, 0, 3).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  CHECK(RegisterAs(**thief, "other", token, 1, 2).error_code() ==
        grpc::StatusCode::PERMISSION_DENIED);
  REQUIRE(RegisterAs(**thief, "mallory", token, 4, 5).ok());
  CHECK(c.coordinator->state().registry.OwnerOf(4)->identity == "cert:mallory-0");
}

}  // namespace
}  // namespace shefl
