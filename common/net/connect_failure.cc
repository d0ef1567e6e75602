#include "common/net/connect_failure.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace shefl {

namespace {

// gRPC's and OpenSSL's wording varies in case across versions.
bool Has(absl::string_view text, absl::string_view what) {
  return absl::StrContains(absl::AsciiStrToLower(text), absl::AsciiStrToLower(what));
}

}  // namespace

ConnectFailure ClassifyConnectFailure(absl::string_view m, const TlsOptions& tls) {
  // Nothing listens, or no route: the coordinator is down or elsewhere.
  if (Has(m, "connection refused") || Has(m, "no route") ||
      Has(m, "name resolution") || Has(m, "DNS resolution"))
    return ConnectFailure::kUnreachable;
  if (!tls.insecure) {
    if (Has(m, "certificate verify failed") || Has(m, "CERTIFICATE_VERIFY_FAILED"))
      return ConnectFailure::kUntrustedServer;
    if (Has(m, "not in peer certificate") || Has(m, "hostname mismatch"))
      return ConnectFailure::kServerName;
    if (Has(m, "wrong version number") || Has(m, "WRONG_VERSION_NUMBER"))
      return ConnectFailure::kPlaintextServer;
  }
  // The connection was accepted, then closed before HTTP/2 began: the
  // coordinator's TLS side gave up on this daemon's handshake.
  if (Has(m, "handshake") || Has(m, "socket closed") ||
      Has(m, "connection reset") || Has(m, "end of TCP stream") ||
      Has(m, "certificate required") || Has(m, "alert"))
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
