// A development PKI made with OpenSSL's library (`shefl certs`, and `shefl
// run` for each run): a CA, a server certificate for the coordinator's
// host names, one client certificate per daemon for mutual TLS, and the
// registration token. For labs and tests; a site with its own CA uses its
// own files with the same flags.
// Thread-compatible: PkiOptions is a plain value.
#ifndef SHEFL_COMMON_NET_CERTS_H_
#define SHEFL_COMMON_NET_CERTS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace shefl {

struct PkiOptions {
  std::string out_dir;
  // Names and addresses the server certificate is valid for (IPv4/IPv6
  // literals become IP entries, the rest DNS); localhost and 127.0.0.1 are
  // always added.
  std::vector<std::string> hosts;
  int clients = 2;  // client-0 .. client-<clients-1>
  // Validity of the new certificates, in seconds from now (negative: in
  // the past; tests make expired ones this way).
  int64_t not_before_s = -3600;
  int64_t not_after_s = int64_t{365} * 86400;
  // Use ca.pem/ca.key already in out_dir (to add or renew leaf
  // certificates under the same CA) instead of making a new CA.
  bool reuse_ca = false;
  // Overwrite an existing ca.key (otherwise an error: a new CA silently
  // locks out every daemon holding a certificate of the old one).
  bool force = false;
  bool write_token = true;
  // Client certificates' CN is <client_cn_prefix><i>; client_alt_names, if
  // set, are their SANs in OpenSSL's syntax ("DNS:a,DNS:b"). Tests make a
  // certificate whose SAN names another daemon this way.
  std::string client_cn_prefix = "shefl-client-";
  std::string client_alt_names;
};

// Writes ca.pem, ca.key, server.pem, server.key, client-<i>.pem/.key,
// token (the shared token), client-<i>.token (each daemon's own) and tokens
// (the coordinator's list of them, common/net/token_book.h) into out_dir (created if missing): EC P-256 keys, SHA-256
// signatures, random 128-bit serials; the CA with basicConstraints
// CA:TRUE and keyUsage keyCertSign,cRLSign (both critical), the server
// with serverAuth and the SANs of `hosts`, client-<i> with CN
// "shefl-client-<i>" and clientAuth. Keys and token are mode 0600; every
// file is written to a temporary name in out_dir, fsynced and renamed,
// then the directory is fsynced. `on_file` is called with each path
// written. Errors name the file and carry OpenSSL's reason.
//
// Tests make the certificates a handshake must refuse with the same call:
// an expired set with not_after_s < 0 (and reuse_ca over a copy of a good
// ca.pem/ca.key, for leaves of the right CA), a foreign CA by a second
// call into another folder.
absl::Status MakeDevPki(const PkiOptions& o,
                        const std::function<void(const std::string&)>& on_file =
                            nullptr);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_CERTS_H_
