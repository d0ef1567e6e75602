#include "common/net/connect_failure.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shefl {

ConnectFailure ClassifyConnectFailure(absl::string_view message,
                                      const TlsOptions& tls) {
  // gRPC's and OpenSSL's wording varies in case across versions.
  const std::string m = absl::AsciiStrToLower(message);
  const auto Has = [&m](absl::string_view lower) { return absl::StrContains(m, lower); };
  // Nothing listens, or no route: the coordinator is down or elsewhere.
  if (Has("connection refused") || Has("no route") ||
      Has("name resolution") || Has("dns resolution"))
    return ConnectFailure::kUnreachable;
  if (!tls.insecure) {
    if (Has("certificate verify failed") || Has("certificate_verify_failed"))
      return ConnectFailure::kUntrustedServer;
    if (Has("not in peer certificate") || Has("hostname mismatch"))
      return ConnectFailure::kServerName;
    if (Has("wrong version number") || Has("wrong_version_number"))
      return ConnectFailure::kPlaintextServer;
  }
  // The connection was accepted, then closed before HTTP/2 began: the
  // coordinator's TLS side gave up on this daemon's handshake.
  if (Has("handshake") || Has("socket closed") ||
      Has("connection reset") || Has("end of tcp stream") ||
      Has("certificate required") || Has("alert"))
    return ConnectFailure::kHandshakeRefused;
  return ConnectFailure::kUnreachable;
}

std::string ExplainConnectFailure(ConnectFailure kind, const TlsOptions& tls) {
  switch (kind) {
    case ConnectFailure::kUnreachable:
      return "unreachable";
    case ConnectFailure::kUntrustedServer:
      return tls.ca_file.empty()
                 ? "refused: its TLS certificate is not signed by a CA this "
                   "machine trusts (no --tls-ca: the system's CAs); give "
                   "--tls-ca the run's ca.pem"
                 : absl::StrCat("refused: its TLS certificate is not signed by "
                                "--tls-ca ", tls.ca_file,
                                "; give --tls-ca the CA that signed it");
    case ConnectFailure::kServerName:
      return absl::StrCat(
          "refused: its TLS certificate does not name '",
          tls.server_name.empty() ? std::string("the host in --coordinator")
                                  : tls.server_name,
          "'; connect by a name it holds (shefl certs --hosts) or set "
          "--tls-server-name");
    case ConnectFailure::kPlaintextServer:
      return "answers in plaintext, not TLS: give this daemon --insecure, or "
             "start the coordinator with --tls-cert and --tls-key";
    case ConnectFailure::kHandshakeRefused:
      if (tls.insecure)
        return "closed the connection: it speaks TLS and this daemon "
               "plaintext (--insecure); drop --insecure and give --tls-ca "
               "(and --tls-cert/--tls-key under mutual TLS)";
      if (tls.cert_file.empty())
        return "refused the TLS handshake: under mutual TLS it wants this "
               "daemon's certificate; give --tls-cert and --tls-key (shefl "
               "certs writes client-<i>.pem and .key)";
      return "refused the TLS handshake: check that --tls-cert is signed by "
             "the coordinator's --tls-client-ca and that --tls-key matches it";
  }
  return "unreachable";
}

}  // namespace shefl
