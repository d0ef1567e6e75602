// `shefl certs` as a user runs it, checked with OpenSSL's own verifier:
// the chain, the names, the key usages, the algorithms, the validity, the
// key modes and the token; and MakeDevPki's options that tls_test uses to
// make certificates a handshake must refuse (expired, foreign CA).
#include "common/net/certs.h"

#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::BinDir;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Store = std::unique_ptr<X509_STORE, Deleter<X509_STORE, X509_STORE_free>>;
using StoreCtx =
    std::unique_ptr<X509_STORE_CTX, Deleter<X509_STORE_CTX, X509_STORE_CTX_free>>;
using Bn = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;

void FreeNames(GENERAL_NAMES* n) { GENERAL_NAMES_free(n); }
using Names = std::unique_ptr<GENERAL_NAMES, Deleter<GENERAL_NAMES, FreeNames>>;

std::string Shefl() { return BinDir() + "/shefl"; }

Cert LoadCert(const std::string& path) {
  INFO(path);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "r"),
                                          std::fclose);
  REQUIRE(f != nullptr);
  Cert c(PEM_read_X509(f.get(), nullptr, nullptr, nullptr));
  REQUIRE(c != nullptr);
  return c;
}

Key LoadKey(const std::string& path) {
  INFO(path);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "r"),
                                          std::fclose);
  REQUIRE(f != nullptr);
  Key k(PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr));
  REQUIRE(k != nullptr);
  return k;
}

// X509_verify_cert of `leaf` against `ca` alone, for `purpose`; returns
// X509_V_OK or the verifier's reason.
int VerifyError(X509* ca, X509* leaf, int purpose) {
  Store store(X509_STORE_new());
  StoreCtx ctx(X509_STORE_CTX_new());
  REQUIRE(store);
  REQUIRE(ctx);
  REQUIRE(X509_STORE_add_cert(store.get(), ca) == 1);
  REQUIRE(X509_STORE_CTX_init(ctx.get(), store.get(), leaf, nullptr) == 1);
  REQUIRE(X509_STORE_CTX_set_purpose(ctx.get(), purpose) == 1);
  const int ok = X509_verify_cert(ctx.get());
  const int err = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  return ok == 1 ? X509_V_OK : (err == X509_V_OK ? -1 : err);
}
bool Verifies(X509* ca, X509* leaf, int purpose) {
  return VerifyError(ca, leaf, purpose) == X509_V_OK;
}

int Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

std::string CommonName(X509* cert) {
  char buf[256] = "";
  X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf,
                            sizeof buf);
  return buf;
}

// Seconds from now to `t` (negative: in the past).
long SecondsFromNow(const ASN1_TIME* t) {
  int days = 0, secs = 0;
  REQUIRE(ASN1_TIME_diff(&days, &secs, nullptr, t) == 1);
  return long{days} * 86400 + secs;
}

std::string SerialHex(X509* cert) {
  Bn bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  REQUIRE(bn);
  char* hex = BN_bn2hex(bn.get());
  std::string s = hex;
  OPENSSL_free(hex);
  return s;
}

// What every certificate `shefl certs` makes has in common: EC P-256,
// ECDSA with SHA-256, a random serial, valid from an hour ago for `days`.
void CheckCommon(X509* cert, EVP_PKEY* key, int days,
                 std::set<std::string>& serials) {
  INFO(CommonName(cert));
  CHECK(X509_check_private_key(cert, key) == 1);
  CHECK(X509_get_signature_nid(cert) == NID_ecdsa_with_SHA256);
  char group[64] = "";
  size_t len = 0;
  CHECK(EVP_PKEY_get_group_name(key, group, sizeof group, &len) == 1);
  CHECK(std::string(group) == "prime256v1");
  // 128 random bits: fewer than 97 significant ones has probability 2^-32.
  Bn bn(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  CHECK(BN_num_bits(bn.get()) > 96);
  CHECK(BN_num_bits(bn.get()) <= 128);
  CHECK(serials.insert(SerialHex(cert)).second);
  // Generous slack: the process ran a few seconds ago on a loaded machine.
  const long start = SecondsFromNow(X509_get0_notBefore(cert));
  const long end = SecondsFromNow(X509_get0_notAfter(cert));
  CHECK(start <= -3600 + 5);
  CHECK(start >= -3600 - 300);
  CHECK(end <= long{days} * 86400 + 5);
  CHECK(end >= long{days} * 86400 - 300);
}

bool ExtensionCritical(X509* cert, int nid) {
  const int i = X509_get_ext_by_NID(cert, nid, -1);
  return i >= 0 && X509_EXTENSION_get_critical(X509_get_ext(cert, i)) == 1;
}

TEST_CASE("shefl certs makes a CA, server and client certificates and a token",
          "[certs]") {
  TempDir dir;
  const std::string out = dir / "pki";
  auto r = RunProcess({Shefl(), "certs", "--out", out, "--hosts",
                       "10.1.2.3,lab-a.example,::1", "--clients", "3"},
                      60);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::set<std::string> serials;

  // The CA: self-signed, a CA by its critical basicConstraints, allowed
  // to sign certificates and CRLs and nothing else.
  Cert ca = LoadCert(out + "/ca.pem");
  Key ca_key = LoadKey(out + "/ca.key");
  CheckCommon(ca.get(), ca_key.get(), 365, serials);
  CHECK(X509_verify(ca.get(), ca_key.get()) == 1);
  CHECK(X509_check_ca(ca.get()) == 1);
  CHECK(ExtensionCritical(ca.get(), NID_basic_constraints));
  CHECK(ExtensionCritical(ca.get(), NID_key_usage));
  CHECK(X509_get_key_usage(ca.get()) == (KU_KEY_CERT_SIGN | KU_CRL_SIGN));

  // The server: chains to the CA for serverAuth only, named by every host.
  Cert server = LoadCert(out + "/server.pem");
  Key server_key = LoadKey(out + "/server.key");
  CheckCommon(server.get(), server_key.get(), 365, serials);
  CHECK(Verifies(ca.get(), server.get(), X509_PURPOSE_SSL_SERVER));
  CHECK_FALSE(Verifies(ca.get(), server.get(), X509_PURPOSE_SSL_CLIENT));
  CHECK(X509_check_ca(server.get()) == 0);
  CHECK((X509_get_extended_key_usage(server.get()) & XKU_SSL_SERVER) != 0);
  CHECK((X509_get_extended_key_usage(server.get()) & XKU_SSL_CLIENT) == 0);
  for (const char* host : {"lab-a.example", "localhost"})
    CHECK(X509_check_host(server.get(), host, 0, 0, nullptr) == 1);
  for (const char* ip : {"10.1.2.3", "127.0.0.1", "::1"})
    CHECK(X509_check_ip_asc(server.get(), ip, 0) == 1);
  CHECK(X509_check_host(server.get(), "other.example", 0, 0, nullptr) != 1);
  CHECK(X509_check_ip_asc(server.get(), "10.1.2.4", 0) != 1);
  // Addresses are IP entries, names DNS entries, and nothing else is there.
  Names names(static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(server.get(), NID_subject_alt_name, nullptr, nullptr)));
  REQUIRE(names);
  std::multiset<std::string> dns;
  int ips = 0;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
    if (n->type == GEN_IPADD) ++ips;
    if (n->type == GEN_DNS)
      dns.insert(std::string(
          reinterpret_cast<const char*>(ASN1_STRING_get0_data(n->d.dNSName)),
          ASN1_STRING_length(n->d.dNSName)));
  }
  CHECK(dns == std::multiset<std::string>{"lab-a.example", "localhost"});
  CHECK(ips == 3);

  // Clients: chain for clientAuth only, named shefl-client-<i>.
  for (int i = 0; i < 3; ++i) {
    const std::string stem = out + "/client-" + std::to_string(i);
    Cert client = LoadCert(stem + ".pem");
    Key key = LoadKey(stem + ".key");
    CheckCommon(client.get(), key.get(), 365, serials);
    CHECK(CommonName(client.get()) == "shefl-client-" + std::to_string(i));
    CHECK(Verifies(ca.get(), client.get(), X509_PURPOSE_SSL_CLIENT));
    CHECK_FALSE(Verifies(ca.get(), client.get(), X509_PURPOSE_SSL_SERVER));
    CHECK((X509_get_extended_key_usage(client.get()) & XKU_SSL_CLIENT) != 0);
    CHECK((X509_get_extended_key_usage(client.get()) & XKU_SSL_SERVER) == 0);
    // A key of one client does not pass for another's certificate.
    if (i > 0) {
      Key other = LoadKey(out + "/client-0.key");
      CHECK(X509_check_private_key(client.get(), other.get()) != 1);
      ERR_clear_error();
    }
    CHECK(Mode(stem + ".key") == 0600);
    CHECK_THAT(r.output, Catch::Contains("wrote " + stem + ".key"));
    CHECK_THAT(r.output, Catch::Contains("wrote " + stem + ".pem"));
  }
  CHECK_FALSE(std::filesystem::exists(out + "/client-3.pem"));
  CHECK(Mode(out + "/ca.key") == 0600);
  CHECK(Mode(out + "/server.key") == 0600);
  CHECK(Mode(out + "/token") == 0600);
  // Every file went through a temporary name; none is left behind.
  for (const auto& e : std::filesystem::directory_iterator(out))
    CHECK(e.path().extension() != ".tmp");
  const std::string token = ReadFile(out + "/token");
  CHECK(std::regex_match(token, std::regex("[0-9a-f]{64}\n")));
  CHECK_THAT(r.output, Catch::Contains("--tls-cert " + out + "/server.pem"));
  CHECK_THAT(r.output, Catch::Contains("--token-file " + out + "/token"));

  // A second run would replace the CA: refused, naming the key and the
  // way out, and the old key is untouched.
  const std::string old_ca_key = ReadFile(out + "/ca.key");
  auto again = RunProcess({Shefl(), "certs", "--out", out, "--hosts", "x"}, 60);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.output, Catch::Contains(out + "/ca.key"));
  CHECK_THAT(again.output, Catch::Contains("--force"));
  // Compared as bools, so a failure does not print key material.
  const bool ca_key_kept = ReadFile(out + "/ca.key") == old_ca_key;
  const bool token_kept = ReadFile(out + "/token") == token;
  CHECK(ca_key_kept);
  CHECK(token_kept);
  auto forced = RunProcess(
      {Shefl(), "certs", "--out", out, "--hosts", "x", "--force"}, 60);
  CHECK(forced.exit_code == 0);
  const bool ca_key_replaced = ReadFile(out + "/ca.key") != old_ca_key;
  const bool token_replaced = ReadFile(out + "/token") != token;
  CHECK(ca_key_replaced);
  CHECK(token_replaced);
  // The old server certificate does not chain to the new CA.
  Cert new_ca = LoadCert(out + "/ca.pem");
  CHECK_FALSE(Verifies(new_ca.get(), server.get(), X509_PURPOSE_SSL_SERVER));
}

TEST_CASE("shefl certs makes two clients by default and honours --days",
          "[certs]") {
  TempDir dir;
  const std::string a = dir / "a", b = dir / "b";
  auto ra = RunProcess({Shefl(), "certs", "--out", a, "--hosts", "h1", "--days",
                        "7"},
                       60);
  auto rb = RunProcess({Shefl(), "certs", "--out", b, "--hosts", "h1"}, 60);
  INFO(ra.output << rb.output);
  REQUIRE(ra.exit_code == 0);
  REQUIRE(rb.exit_code == 0);
  std::set<std::string> serials;
  for (const char* f : {"ca", "server", "client-0", "client-1"}) {
    Cert c = LoadCert(a + "/" + f + ".pem");
    Key k = LoadKey(a + "/" + f + ".key");
    CheckCommon(c.get(), k.get(), 7, serials);
  }
  CHECK_FALSE(std::filesystem::exists(a + "/client-2.pem"));
  CHECK(ReadFile(a + "/token") != ReadFile(b + "/token"));
  // Two CAs are two trust roots: b's server means nothing to a's CA.
  Cert ca_a = LoadCert(a + "/ca.pem");
  Cert server_b = LoadCert(b + "/server.pem");
  CHECK(VerifyError(ca_a.get(), server_b.get(), X509_PURPOSE_SSL_SERVER) ==
        X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
}

TEST_CASE("shefl certs --owner gives the service's files to its user, never ca.key",
          "[certs]") {
  REQUIRE(::geteuid() == 0);  // giving files away needs root; CI runs as root
  TempDir dir;
  const std::string out = dir / "pki";
  auto r = RunProcess({Shefl(), "certs", "--out", out, "--hosts", "coordinator", "--clients",
                       "1", "--owner", "10001:10002"},
                      60);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* f : {"ca.pem", "server.pem", "server.key", "client-0.pem", "client-0.key",
                        "token", "client-0.token", "tokens"}) {
    struct stat st {};
    REQUIRE(::stat((out + "/" + f).c_str(), &st) == 0);
    INFO(f);
    CHECK(st.st_uid == 10001u);
    CHECK(st.st_gid == 10002u);
  }
  struct stat ca {};
  REQUIRE(::stat((out + "/ca.key").c_str(), &ca) == 0);
  CHECK(ca.st_uid == 0u);
  CHECK((ca.st_mode & 077) == 0);
  for (const char* bad : {"x", "10001:", "1:2:3", "-5"}) {
    auto b = RunProcess({Shefl(), "certs", "--out", dir / "b", "--hosts", "h", "--owner", bad},
                        60);
    INFO(bad << ": " << b.output);
    CHECK(b.exit_code == 2);
    CHECK_THAT(b.output, Catch::Contains("--owner"));
  }
  CHECK_FALSE(std::filesystem::exists(dir / "b/ca.key"));
}

TEST_CASE("shefl certs names the flag it needs", "[certs]") {
  TempDir dir;
  const std::string p = dir / "p";
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{"--hosts", "a"}, "--out"},
      {{"--out", p}, "--hosts"},
      {{"--out", p, "--hosts", ","}, "--hosts"},
      {{"--out", p, "--hosts", ""}, "--hosts"},
      {{"--out", p, "--hosts"}, "--hosts"},
      {{"--out", p, "--hosts", "coord:50051"}, "--hosts"},
      {{"--out", p, "--hosts", "a", "--days", "0"}, "--days"},
      {{"--out", p, "--hosts", "a", "--clients", "-1"}, "--clients"},
      {{"--out", p, "--hosts", "a", "--clients", "two"}, "--clients"},
      {{"--out", p, "--hosts", "a", "--bogus", "1"}, "--bogus"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {Shefl(), "certs"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = RunProcess(argv, 60);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains(c.names));
  }
  // No usage error gets as far as writing anything.
  CHECK_FALSE(std::filesystem::exists(p + "/ca.key"));

  // A folder that cannot be made: the error names it.
  testing::WriteFile(dir / "file", "not a folder");
  auto r = RunProcess(
      {Shefl(), "certs", "--out", dir / "file", "--hosts", "a"}, 60);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains(dir / "file"));
}

TEST_CASE("MakeDevPki makes expired leaves under an existing CA and names "
          "the file OpenSSL could not read",
          "[certs]") {
  TempDir dir;
  const std::string good = dir / "good", expired = dir / "expired";
  PkiOptions o;
  o.out_dir = good;
  o.hosts = {"localhost"};
  REQUIRE(MakeDevPki(o).ok());

  // Leaves of the right CA whose validity ended yesterday.
  std::filesystem::create_directories(expired);
  for (const char* f : {"ca.pem", "ca.key"})
    std::filesystem::copy_file(good + "/" + f, expired + "/" + f);
  PkiOptions old;
  old.out_dir = expired;
  old.clients = 1;
  old.reuse_ca = true;
  old.write_token = false;
  old.not_before_s = -2 * 86400;
  old.not_after_s = -86400;
  std::vector<std::string> written;
  absl::Status st = MakeDevPki(
      old, [&](const std::string& path) { written.push_back(path); });
  INFO(st);
  REQUIRE(st.ok());
  CHECK(written == std::vector<std::string>{
                       expired + "/server.key", expired + "/server.pem",
                       expired + "/client-0.key", expired + "/client-0.pem"});
  CHECK(ReadFile(expired + "/ca.key") == ReadFile(good + "/ca.key"));
  CHECK_FALSE(std::filesystem::exists(expired + "/token"));
  Cert ca = LoadCert(good + "/ca.pem");
  Cert client = LoadCert(expired + "/client-0.pem");
  CHECK(VerifyError(ca.get(), client.get(), X509_PURPOSE_SSL_CLIENT) ==
        X509_V_ERR_CERT_HAS_EXPIRED);
  Cert fresh = LoadCert(good + "/client-0.pem");
  CHECK(VerifyError(ca.get(), fresh.get(), X509_PURPOSE_SSL_CLIENT) ==
        X509_V_OK);

  // A CA whose key is not its certificate's: refused, both files named,
  // with OpenSSL's reason.
  std::filesystem::copy_file(dir / "expired/server.key", expired + "/ca.key",
                             std::filesystem::copy_options::overwrite_existing);
  st = MakeDevPki(old);
  CHECK_FALSE(st.ok());
  CHECK_THAT(std::string(st.message()), Catch::Contains(expired + "/ca.key"));
  CHECK_THAT(std::string(st.message()), Catch::Contains(expired + "/ca.pem"));
  CHECK_THAT(std::string(st.message()), Catch::Contains("key values mismatch"));
  // A certificate file that is not PEM: its name and OpenSSL's reason.
  testing::WriteFile(expired + "/ca.pem", "garbage\n");
  std::filesystem::copy_file(good + "/ca.key", expired + "/ca.key",
                             std::filesystem::copy_options::overwrite_existing);
  st = MakeDevPki(old);
  CHECK_FALSE(st.ok());
  CHECK_THAT(std::string(st.message()), Catch::Contains(expired + "/ca.pem"));
  CHECK_THAT(std::string(st.message()), Catch::Contains("no start line"));
}

}  // namespace
}  // namespace shefl
