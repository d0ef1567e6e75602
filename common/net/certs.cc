#include "common/net/certs.h"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/core/durable_file.h"
#include "common/core/status_macros.h"

namespace shefl {

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using CertPtr = std::unique_ptr<X509, Deleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, Deleter<BIO, BIO_free_all>>;
using BnPtr = std::unique_ptr<BIGNUM, Deleter<BIGNUM, BN_free>>;
using ExtPtr =
    std::unique_ptr<X509_EXTENSION, Deleter<X509_EXTENSION, X509_EXTENSION_free>>;

// The error OpenSSL queued, with what we were doing. The first queued
// error is the root cause; later ones are the callers' reports of it.
absl::Status SslError(const std::string& what) {
  char buf[256] = "no OpenSSL error queued";
  if (unsigned long e = ERR_get_error()) ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return absl::InternalError(absl::StrCat(what, ": ", buf));
}

bool IsIp(const std::string& host) {
  unsigned char buf[16];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// The SAN goes through OpenSSL's extension config syntax, where ',' and
// ':' are separators and '@' names a section; a DNS name needs none of
// them, so anything beyond letters, digits, '-', '.', '_' and a wildcard
// '*' is a typo (a "host:port", a stray space) to report, not to encode.
bool IsDnsName(const std::string& host) {
  return !host.empty() &&
         std::all_of(host.begin(), host.end(), [](unsigned char c) {
           return std::isalnum(c) || c == '-' || c == '.' || c == '_' ||
                  c == '*';
         });
}

std::string SubjectAltNames(const std::vector<std::string>& hosts) {
  std::vector<std::string> names = {"DNS:localhost", "IP:127.0.0.1"};
  for (const std::string& h : hosts) {
    std::string entry = absl::StrCat(IsIp(h) ? "IP:" : "DNS:", h);
    if (std::find(names.begin(), names.end(), entry) == names.end())
      names.push_back(entry);
  }
  return absl::StrJoin(names, ",");
}

absl::Status AddExtension(X509* cert, X509* issuer, int nid,
                          const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  ExtPtr ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str()));
  if (!ext) return SslError(absl::StrCat("extension ", OBJ_nid2sn(nid)));
  // X509_add_ext copies the extension; ours is freed either way.
  if (!X509_add_ext(cert, ext.get(), -1))
    return SslError(absl::StrCat("adding ", OBJ_nid2sn(nid)));
  return absl::OkStatus();
}

struct CertSpec {
  std::string common_name;
  bool ca = false;
  std::string extended_usage;  // "serverAuth" | "clientAuth"
  std::string alt_names;       // SANs (OpenSSL syntax), empty: none
};

// A certificate for `key`, signed by `issuer`/`issuer_key` (itself when
// `issuer` is null), with a random 128-bit serial.
absl::StatusOr<CertPtr> MakeCert(const CertSpec& spec, EVP_PKEY* key,
                                 X509* issuer, EVP_PKEY* issuer_key,
                                 const PkiOptions& o) {
  CertPtr cert(X509_new());
  unsigned char serial[16];
  if (!cert || RAND_bytes(serial, sizeof serial) != 1)
    return SslError("new certificate");
  // BN_bin2bn reads the bytes as unsigned, so all 128 bits stay random and
  // the INTEGER is positive (17 DER bytes at most, under RFC 5280's 20).
  BnPtr bn(BN_bin2bn(serial, sizeof serial, nullptr));
  if (!bn || !X509_set_version(cert.get(), 2) ||
      !BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) ||
      !X509_gmtime_adj(X509_getm_notBefore(cert.get()), o.not_before_s) ||
      !X509_gmtime_adj(X509_getm_notAfter(cert.get()), o.not_after_s) ||
      !X509_set_pubkey(cert.get(), key))
    return SslError("certificate fields");
  X509_NAME* name = X509_get_subject_name(cert.get());
  if (!X509_NAME_add_entry_by_txt(
          name, "CN", MBSTRING_ASC,
          reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
          -1, 0) ||
      !X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer)
                                               : name))
    return SslError("certificate names");
  X509* signer = issuer ? issuer : cert.get();
  std::vector<std::pair<int, std::string>> exts = {
      {NID_basic_constraints, spec.ca ? "critical,CA:TRUE" : "critical,CA:FALSE"},
      // EC keys only sign (ECDHE does the key exchange), so a leaf needs
      // digitalSignature and nothing that implies RSA key transport.
      {NID_key_usage, spec.ca ? "critical,keyCertSign,cRLSign"
                              : "critical,digitalSignature"},
      {NID_subject_key_identifier, "hash"},
      {NID_authority_key_identifier, "keyid:always"}};
  if (!spec.extended_usage.empty())
    exts.push_back({NID_ext_key_usage, spec.extended_usage});
  if (!spec.alt_names.empty())
    exts.push_back({NID_subject_alt_name, spec.alt_names});
  for (const auto& [nid, value] : exts)
    SHEFL_RETURN_IF_ERROR(AddExtension(cert.get(), signer, nid, value));
  if (!X509_sign(cert.get(), issuer_key ? issuer_key : key, EVP_sha256()))
    return SslError(absl::StrCat("signing ", spec.common_name));
  return cert;
}

absl::StatusOr<std::string> Pem(X509* cert, EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  const bool ok = bio && (cert ? PEM_write_bio_X509(bio.get(), cert)
                               : PEM_write_bio_PrivateKey(bio.get(), key, nullptr,
                                                          nullptr, 0, nullptr,
                                                          nullptr));
  if (!ok) return SslError("PEM encoding");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

class PkiWriter {
 public:
  PkiWriter(const PkiOptions& o,
            const std::function<void(const std::string&)>& on_file)
      : o_(o), on_file_(on_file) {}

  std::string Path(const std::string& name) const {
    return o_.out_dir + "/" + name;
  }
  static absl::Status Named(const std::string& path, const absl::Status& st) {
    return absl::Status(st.code(), absl::StrCat(path, ": ", st.message()));
  }
  // WriteFileDurably's errors already name the file.
  absl::Status Write(const std::string& name, const std::string& text,
                     mode_t mode) {
    const std::string path = Path(name);
    SHEFL_RETURN_IF_ERROR(WriteFileDurably(path, text, mode));
    if (on_file_) on_file_(path);
    return absl::OkStatus();
  }
  // Makes a key and its certificate and writes both as <stem>.key/.pem.
  absl::StatusOr<std::pair<KeyPtr, CertPtr>> Issue(const std::string& stem,
                                                   const CertSpec& spec,
                                                   X509* ca, EVP_PKEY* ca_key) {
    const std::string key_path = Path(stem + ".key");
    const std::string cert_path = Path(stem + ".pem");
    KeyPtr key(EVP_EC_gen("P-256"));
    if (!key) return SslError(absl::StrCat(key_path, ": P-256 key generation"));
    auto cert = MakeCert(spec, key.get(), ca, ca_key, o_);
    if (!cert.ok()) return Named(cert_path, cert.status());
    auto key_pem = Pem(nullptr, key.get());
    if (!key_pem.ok()) return Named(key_path, key_pem.status());
    auto cert_pem = Pem(cert->get(), nullptr);
    if (!cert_pem.ok()) return Named(cert_path, cert_pem.status());
    SHEFL_RETURN_IF_ERROR(Write(stem + ".key", *key_pem, 0600));
    SHEFL_RETURN_IF_ERROR(Write(stem + ".pem", *cert_pem, 0644));
    return std::make_pair(std::move(key), std::move(*cert));
  }

 private:
  const PkiOptions& o_;
  const std::function<void(const std::string&)>& on_file_;
};

absl::StatusOr<std::pair<KeyPtr, CertPtr>> LoadCa(const std::string& dir) {
  const std::string key_path = dir + "/ca.key", cert_path = dir + "/ca.pem";
  BioPtr kb(BIO_new_file(key_path.c_str(), "r"));
  if (!kb) return SslError(absl::StrCat("cannot open ", key_path));
  KeyPtr key(PEM_read_bio_PrivateKey(kb.get(), nullptr, nullptr, nullptr));
  if (!key) return SslError(absl::StrCat("cannot read a key from ", key_path));
  BioPtr cb(BIO_new_file(cert_path.c_str(), "r"));
  if (!cb) return SslError(absl::StrCat("cannot open ", cert_path));
  CertPtr cert(PEM_read_bio_X509(cb.get(), nullptr, nullptr, nullptr));
  if (!cert)
    return SslError(absl::StrCat("cannot read a certificate from ", cert_path));
  // A key from one CA and a certificate from another would sign leaves
  // that nothing verifies; say so here rather than in a TLS handshake.
  if (X509_check_private_key(cert.get(), key.get()) != 1)
    return SslError(absl::StrCat(key_path, " does not match ", cert_path));
  return std::make_pair(std::move(key), std::move(cert));
}

absl::Status CheckOptions(const PkiOptions& o) {
  if (o.out_dir.empty()) return absl::InvalidArgumentError("--out is required");
  if (o.clients < 0 || o.clients > 1000)
    return absl::InvalidArgumentError(
        absl::StrCat("--clients ", o.clients, ": expected 0 to 1000"));
  for (const std::string& h : o.hosts)
    if (!IsIp(h) && !IsDnsName(h))
      return absl::InvalidArgumentError(absl::StrCat(
          "--hosts: '", h, "' is neither an IP address nor a DNS name"));
  if (o.not_after_s <= o.not_before_s)
    return absl::InvalidArgumentError(
        "validity ends before it starts (--days must be at least 1)");
  return absl::OkStatus();
}

}  // namespace

namespace {

// 32 random bytes in hex.
absl::StatusOr<std::string> RandomToken() {
  unsigned char raw[32];
  if (RAND_bytes(raw, sizeof raw) != 1) return SslError("token: RAND_bytes");
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
}

}  // namespace

absl::Status MakeDevPki(const PkiOptions& o,
                        const std::function<void(const std::string&)>& on_file) {
  SHEFL_RETURN_IF_ERROR(CheckOptions(o));
  // SslError reports the oldest queued error; one left by the caller's
  // earlier OpenSSL calls is not ours.
  ERR_clear_error();
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("cannot create '", o.out_dir, "': ", ec.message()));
  // Keys live here: only the owner may list or enter the folder.
  std::filesystem::permissions(o.out_dir, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::replace, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("cannot make '", o.out_dir, "' 0700: ", ec.message()));
  const std::string ca_key_path = o.out_dir + "/ca.key";
  const bool have_ca = std::filesystem::exists(ca_key_path, ec);
  if (ec)  // unknown is not "absent": we could be about to replace a CA
    return absl::InternalError(
        absl::StrCat("cannot check '", ca_key_path, "': ", ec.message()));
  if (have_ca && !o.reuse_ca && !o.force)
    return absl::AlreadyExistsError(absl::StrCat(
        ca_key_path, " exists: a new CA would lock out every daemon holding "
                     "a certificate of the old one (use --force to replace "
                     "it)"));
  PkiWriter w(o, on_file);
  KeyPtr ca_key;
  CertPtr ca;
  if (o.reuse_ca && have_ca) {
    SHEFL_ASSIGN_OR_RETURN(auto loaded, LoadCa(o.out_dir));
    ca_key = std::move(loaded.first);
    ca = std::move(loaded.second);
  } else {
    SHEFL_ASSIGN_OR_RETURN(auto made,
                           w.Issue("ca", {"shefl development CA", true, "", ""},
                                   nullptr, nullptr));
    ca_key = std::move(made.first);
    ca = std::move(made.second);
  }
  SHEFL_ASSIGN_OR_RETURN(auto server,
                         w.Issue("server",
                                 {"shefl-coordinator", false, "serverAuth",
                                  SubjectAltNames(o.hosts)},
                                 ca.get(), ca_key.get()));
  for (int i = 0; i < o.clients; ++i) {
    SHEFL_ASSIGN_OR_RETURN(auto client,
                           w.Issue(absl::StrCat("client-", i),
                                   {absl::StrCat(o.client_cn_prefix, i), false,
                                    "clientAuth", o.client_alt_names},
                                   ca.get(), ca_key.get()));
  }
  if (!o.write_token) return absl::OkStatus();
  // The shared token, and one per daemon with the coordinator's list of
  // them (common/net/token_book.h): under token-only TLS a daemon's own
  // token is its identity.
  SHEFL_ASSIGN_OR_RETURN(auto token, RandomToken());
  SHEFL_RETURN_IF_ERROR(w.Write("token", token + "\n", 0600));
  std::string list =
      "# shefl-coordinator --token-file: one daemon's name and token a line\n";
  for (int i = 0; i < o.clients; ++i) {
    SHEFL_ASSIGN_OR_RETURN(auto own, RandomToken());
    const std::string name = absl::StrCat("client-", i);
    SHEFL_RETURN_IF_ERROR(w.Write(name + ".token", own + "\n", 0600));
    absl::StrAppend(&list, name, " ", own, "\n");
  }
  return w.Write("tokens", list, 0600);
}

}  // namespace shefl
