// Test PKIs beside the ones `shefl certs` makes, and the ways a peer can
// dial the coordinator with them (right and wrong).
#ifndef SHEFL_TESTS_PKI_SUPPORT_H_
#define SHEFL_TESTS_PKI_SUPPORT_H_

#include <grpcpp/create_channel.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/net/certs.h"
#include "common/net/tls.h"
#include "shefl.grpc.pb.h"
#include "tests/test_support.h"

namespace shefl::testing {

// In `out`: client-0.pem/.key signed by the CA of `ca_dir` (its ca.pem and
// ca.key are copied), with `o`'s other settings (validity, CN, SANs).
inline absl::Status MakeClientUnderCa(const std::string& ca_dir,
                                      const std::string& out, PkiOptions o) {
  std::filesystem::create_directories(out);
  for (const char* f : {"ca.pem", "ca.key"})
    std::filesystem::copy_file(ca_dir + "/" + f, out + "/" + f);
  o.out_dir = out;
  o.clients = 1;
  o.reuse_ca = true;
  o.write_token = false;
  return MakeDevPki(o);
}

// The same whose validity ended yesterday.
inline absl::Status MakeExpiredClient(const std::string& ca_dir,
                                      const std::string& out) {
  PkiOptions old;
  old.not_before_s = -2 * 86400;
  old.not_after_s = -86400;
  return MakeClientUnderCa(ca_dir, out, old);
}

// A PKI in `dir` made by the real `shefl certs` binary, the way a lab
// makes one: server valid for 127.0.0.1 and localhost, client-0 ..
// client-<clients-1>, a token.
inline absl::Status MakeCertsWithCli(const std::string& dir, int clients) {
  auto r = RunProcess({BinDir() + "/shefl", "certs", "--out", dir, "--hosts",
                       "127.0.0.1,localhost", "--clients",
                       std::to_string(clients)},
                      60);
  if (r.exit_code != 0)
    return absl::InternalError(absl::StrCat("shefl certs: ", r.output));
  return absl::OkStatus();
}

// How a peer dials: the CA it checks the coordinator against, the
// certificate it shows (empty: none), the name it expects (empty: the
// target's host), or plaintext.
struct DialAs {
  bool plaintext = false;
  std::string ca, cert, key, server_name;
};

// The client certificate client-<i> of `pki`, checking the server against
// the same PKI's CA: what a legitimate daemon uses.
inline DialAs ClientOf(const std::string& pki, int i) {
  const std::string c = absl::StrCat(pki, "/client-", i);
  return {false, pki + "/ca.pem", c + ".pem", c + ".key", ""};
}

// The TlsOptions of a daemon that dials as `d`.
inline TlsOptions TlsOf(const DialAs& d) {
  TlsOptions o;
  o.insecure = d.plaintext;
  o.ca_file = d.ca;
  o.cert_file = d.cert;
  o.key_file = d.key;
  o.server_name = d.server_name;
  return o;
}

// A stub on a fresh channel, so one peer's handshake never reuses
// another's connection.
inline absl::StatusOr<std::unique_ptr<v1::Coordinator::Stub>> DialCoordinator(
    const std::string& target, const DialAs& d) {
  const TlsOptions o = TlsOf(d);
  grpc::ChannelArguments args;
  // A channel of its own: gRPC shares subchannels between channels with
  // equal arguments, and a peer must not ride on a connection another
  // peer's handshake opened.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  SHEFL_ASSIGN_OR_RETURN(auto creds, MakeChannelCredentials(o, &args));
  return v1::Coordinator::NewStub(
      grpc::CreateCustomChannel(target, creds, args));
}

// Every way of dialing, starting from the legitimate `good` (a client
// certificate of `pki`), that the TLS handshake of a mutual-TLS
// coordinator must refuse, labelled. `other` is a second PKI (another CA);
// `expired` holds an expired client-0 of `pki`'s CA (MakeExpiredClient).
inline std::vector<std::pair<std::string, DialAs>> HandshakeFailures(
    const DialAs& good, const std::string& other, const std::string& expired) {
  std::vector<std::pair<std::string, DialAs>> out;
  auto with = [&](const char* label, auto change) {
    DialAs d = good;
    change(d);
    out.emplace_back(label, d);
  };
  with("no cert", [](DialAs& d) { d.cert = d.key = ""; });
  with("cert of other CA", [&](DialAs& d) {
    d.cert = other + "/client-0.pem";
    d.key = other + "/client-0.key";
  });
  with("trusts other CA", [&](DialAs& d) { d.ca = other + "/ca.pem"; });
  with("expired cert", [&](DialAs& d) {
    d.cert = expired + "/client-0.pem";
    d.key = expired + "/client-0.key";
  });
  with("wrong host name", [](DialAs& d) { d.server_name = "wrong.example"; });
  with("plaintext", [](DialAs& d) { d.plaintext = true; });
  return out;
}

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_PKI_SUPPORT_H_
