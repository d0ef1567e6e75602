// Transport security for both binaries (docs/DESIGN.md, "Trust and
// faults"): TLS with
// gRPC's SSL credentials, mutual TLS as an option, and the deployment's
// registration token. Plaintext only when the user says --insecure.
// Thread-compatible: TlsOptions is a plain value.
#ifndef SHEFL_COMMON_NET_TLS_H_
#define SHEFL_COMMON_NET_TLS_H_

#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/support/channel_arguments.h>

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace shefl {

struct TlsOptions {
  std::string cert_file;  // own certificate chain (PEM)
  std::string key_file;   // its private key (PEM)
  // Coordinator: the CA that client certificates must chain to; set, it
  // turns on mutual TLS (a client without a valid certificate is refused
  // in the handshake). Daemon: the CA the coordinator's certificate must
  // chain to (empty: the system's roots).
  std::string ca_file;
  std::string server_name;  // daemon: name to check instead of the host
  std::string token_file;   // the registration token, one line
  bool insecure = false;    // plaintext, no checks (logged as a warning)
};

// TLS (or mTLS) server credentials; an error names the file or the missing
// flag. With `insecure`, plaintext credentials and a warning on the log.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& o);
// The daemon's side; `args` receives the server-name override if any.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeChannelCredentials(const TlsOptions& o, grpc::ChannelArguments* args);

// The token in `path` (surrounding whitespace dropped); an error when the
// file cannot be read or holds fewer than 16 characters. Empty path: "".
absl::StatusOr<std::string> ReadToken(const std::string& path);

// Equal in time that depends only on the lengths, so a peer cannot find
// the token byte by byte from response times.
bool TokensEqual(std::string_view a, std::string_view b);

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_TLS_H_
