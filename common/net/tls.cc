#include "common/net/tls.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/net/token_book.h"

namespace shefl {

namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path,
                                    const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return absl::NotFoundError(
        absl::StrCat(flag, " '", path, "': cannot read the file"));
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string pem = ss.str();
  if (pem.find("-----BEGIN ") == std::string::npos)
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", path, "': not a PEM file"));
  return pem;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsOptions& o) {
  if (o.insecure) {
    LogLine("coordinator",
            "WARNING: --insecure: plaintext gRPC, any host that reaches the "
            "port can read the traffic and impersonate daemons");
    return grpc::InsecureServerCredentials();
  }
  if (o.cert_file.empty() || o.key_file.empty())
    return absl::InvalidArgumentError(
        "TLS needs --tls-cert and --tls-key (make them with `shefl certs "
        "--out DIR --hosts HOST`), or pass --insecure for plaintext");
  SHEFL_ASSIGN_OR_RETURN(auto cert, ReadPem(o.cert_file, "--tls-cert"));
  SHEFL_ASSIGN_OR_RETURN(auto key, ReadPem(o.key_file, "--tls-key"));
  grpc::SslServerCredentialsOptions opts;
  opts.pem_key_cert_pairs.push_back({key, cert});
  if (!o.ca_file.empty()) {
    SHEFL_ASSIGN_OR_RETURN(opts.pem_root_certs,
                           ReadPem(o.ca_file, "--tls-client-ca"));
    opts.client_certificate_request =
        GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(opts);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
MakeChannelCredentials(const TlsOptions& o, grpc::ChannelArguments* args) {
  if (o.insecure) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions opts;
  if (!o.ca_file.empty()) {
    SHEFL_ASSIGN_OR_RETURN(opts.pem_root_certs, ReadPem(o.ca_file, "--tls-ca"));
  }
  if (o.cert_file.empty() != o.key_file.empty())
    return absl::InvalidArgumentError(
        "mutual TLS needs both --tls-cert and --tls-key");
  if (!o.cert_file.empty()) {
    SHEFL_ASSIGN_OR_RETURN(auto cert, ReadPem(o.cert_file, "--tls-cert"));
    SHEFL_ASSIGN_OR_RETURN(auto key, ReadPem(o.key_file, "--tls-key"));
    opts.pem_cert_chain = cert;
    opts.pem_private_key = key;
  }
  if (!o.server_name.empty()) args->SetSslTargetNameOverride(o.server_name);
  return grpc::SslCredentials(opts);
}

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  if (path.empty()) return std::string();
  SHEFL_ASSIGN_OR_RETURN(auto text, ReadTokenFile(path));
  std::string token(absl::StripAsciiWhitespace(text));
  if (token.find_first_of(" \t\n") != std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat(
        "--token-file '", path, "': a daemon's token file holds its one token "
        "(this one has several fields or lines: the coordinator's list?)"));
  if (token.size() < 16)
    return absl::InvalidArgumentError(absl::StrCat(
        "--token-file '", path, "': a token needs at least 16 characters (",
        token.size(), " found)"));
  return token;
}

bool TokensEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  volatile unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff = diff | static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace shefl
