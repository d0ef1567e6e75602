// Why a daemon could not reach the coordinator, in words that name the
// flag to fix. gRPC reports a TLS mistake (an untrusted certificate, a
// plaintext peer, a missing client certificate under mutual TLS) as
// UNAVAILABLE, like a coordinator that is down; a daemon that only said
// "unreachable" left its user guessing for ever.
#ifndef SHEFL_COMMON_NET_CONNECT_FAILURE_H_
#define SHEFL_COMMON_NET_CONNECT_FAILURE_H_

#include <string>

#include "absl/strings/string_view.h"
#include "common/net/tls.h"

namespace shefl {

enum class ConnectFailure {
  kUnreachable,        // nothing we can name: down, refused, no route
  kUntrustedServer,    // the coordinator's certificate fails --tls-ca
  kServerName,         // the certificate does not name --tls-server-name
  kPlaintextServer,    // a TLS daemon against a plaintext coordinator
  kHandshakeRefused,   // the coordinator closed the handshake: TLS wanted,
                       // or mutual TLS wanted this daemon's certificate
};

// The kind of `grpc_message` (an UNAVAILABLE call's message) for a daemon
// with options `tls`.
ConnectFailure ClassifyConnectFailure(absl::string_view grpc_message,
                                      const TlsOptions& tls);

// "the coordinator's certificate is not signed by ... give --tls-ca ...":
// the cause and the flag to fix; "unreachable" for kUnreachable.
std::string ExplainConnectFailure(ConnectFailure kind, const TlsOptions& tls);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_CONNECT_FAILURE_H_
