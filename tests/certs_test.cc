// `shefl certs` as a user runs it, checked with OpenSSL's own verifier:
// the chain, the names, the key usages, the key modes and the token.
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <regex>
#include <string>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::BinDir;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
using Cert = std::unique_ptr<X509, X509Free>;

Cert Load(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  REQUIRE(f != nullptr);
  Cert c(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  REQUIRE(c != nullptr);
  return c;
}

// X509_verify_cert of `leaf` against `ca` alone, for `purpose`.
bool Verifies(X509* ca, X509* leaf, int purpose) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_STORE_CTX_set_purpose(ctx, purpose);
  const bool ok = X509_verify_cert(ctx) == 1;
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return ok;
}

int Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

TEST_CASE("shefl certs makes a CA, server and client certificates and a token",
          "[certs]") {
  TempDir dir;
  const std::string out = dir / "pki";
  auto r = RunProcess({BinDir() + "/shefl", "certs", "--out", out, "--hosts",
                       "10.1.2.3,lab-a.example", "--clients", "3"},
                      60);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  Cert ca = Load(out + "/ca.pem"), server = Load(out + "/server.pem");
  CHECK(Verifies(ca.get(), server.get(), X509_PURPOSE_SSL_SERVER));
  CHECK_FALSE(Verifies(ca.get(), server.get(), X509_PURPOSE_SSL_CLIENT));
  for (const char* host : {"lab-a.example", "localhost"})
    CHECK(X509_check_host(server.get(), host, 0, 0, nullptr) == 1);
  CHECK(X509_check_ip_asc(server.get(), "10.1.2.3", 0) == 1);
  CHECK(X509_check_ip_asc(server.get(), "127.0.0.1", 0) == 1);
  CHECK(X509_check_host(server.get(), "other.example", 0, 0, nullptr) != 1);
  for (int i = 0; i < 3; ++i) {
    const std::string stem = out + "/client-" + std::to_string(i);
    Cert client = Load(stem + ".pem");
    CHECK(Verifies(ca.get(), client.get(), X509_PURPOSE_SSL_CLIENT));
    CHECK_FALSE(Verifies(ca.get(), client.get(), X509_PURPOSE_SSL_SERVER));
    CHECK(Mode(stem + ".key") == 0600);
  }
  CHECK(Mode(out + "/ca.key") == 0600);
  CHECK(Mode(out + "/server.key") == 0600);
  CHECK(Mode(out + "/token") == 0600);
  const std::string token = ReadFile(out + "/token");
  CHECK(std::regex_match(token, std::regex("[0-9a-f]{64}\n")));

  // A second run would replace the CA: refused, the old key untouched.
  const std::string ca_key = ReadFile(out + "/ca.key");
  auto again = RunProcess({BinDir() + "/shefl", "certs", "--out", out,
                           "--hosts", "x"},
                          60);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Catch::Contains("--force"));
  CHECK(ReadFile(out + "/ca.key") == ca_key);
  auto forced = RunProcess({BinDir() + "/shefl", "certs", "--out", out,
                            "--hosts", "x", "--force"},
                           60);
  CHECK(forced.exit_code == 0);
  CHECK(ReadFile(out + "/ca.key") != ca_key);
  CHECK(ReadFile(out + "/token") != token);
}

TEST_CASE("shefl certs names the flag it needs", "[certs]") {
  TempDir dir;
  auto no_out = RunProcess({BinDir() + "/shefl", "certs", "--hosts", "a"}, 60);
  CHECK(no_out.exit_code == 2);
  CHECK_THAT(no_out.output, Catch::Contains("--out"));
  auto no_hosts = RunProcess({BinDir() + "/shefl", "certs", "--out", dir / "p"}, 60);
  CHECK(no_hosts.exit_code == 2);
  CHECK_THAT(no_hosts.output, Catch::Contains("--hosts"));
  auto empty = RunProcess(
      {BinDir() + "/shefl", "certs", "--out", dir / "p", "--hosts", ","}, 60);
  CHECK(empty.exit_code == 2);
  CHECK_THAT(empty.output, Catch::Contains("--hosts"));
  auto days = RunProcess({BinDir() + "/shefl", "certs", "--out", dir / "p",
                          "--hosts", "a", "--days", "0"},
                         60);
  CHECK(days.exit_code == 2);
  CHECK_THAT(days.output, Catch::Contains("--days"));
}

}  // namespace
}  // namespace shefl
