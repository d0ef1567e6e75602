#include "cli/health_command.h"

#include <grpcpp/client_context.h>
#include <grpcpp/create_channel.h>

#include <chrono>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/command_preamble.h"
#include "common/core/status_macros.h"
#include "common/net/tls.h"
#include "health.grpc.pb.h"

namespace shefl {

std::string HealthUsage() {
  return "usage: shefl health HOST:PORT [--tls-ca FILE] [--tls-cert FILE "
         "--tls-key FILE]\n"
         "                    [--tls-server-name NAME] [--insecure]\n"
         "                    [--service NAME] [--timeout-s S]\n"
         "\n"
         "  Asks the coordinator's gRPC health service (grpc.health.v1) and\n"
         "  prints its answer. Exit 0 when SERVING, 1 otherwise (including\n"
         "  no answer within --timeout-s, default 5), 2 on a usage error.\n"
         "  TLS by default, as a daemon dials: --tls-ca is the coordinator's\n"
         "  CA, --tls-cert/--tls-key a client certificate for mutual TLS.\n";
}

namespace {

struct HealthArgs {
  std::string target, service;
  double timeout_s = 5;
  TlsOptions tls;
};

absl::Status ParseFlag(const std::string& flag, const std::string& value,
                       HealthArgs& a) {
  if (flag == "--tls-ca") a.tls.ca_file = value;
  else if (flag == "--tls-cert") a.tls.cert_file = value;
  else if (flag == "--tls-key") a.tls.key_file = value;
  else if (flag == "--tls-server-name") a.tls.server_name = value;
  else if (flag == "--service") a.service = value;
  else if (flag == "--timeout-s") {
    if (!absl::SimpleAtod(value, &a.timeout_s) || !(a.timeout_s > 0) ||
        a.timeout_s > 3600)
      return absl::InvalidArgumentError(absl::StrCat(
          "--timeout-s '", value, "': expected seconds above 0, at most 3600"));
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag ", flag));
  }
  return absl::OkStatus();
}

absl::StatusOr<HealthArgs> Parse(const std::vector<std::string>& args) {
  HealthArgs a;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--insecure") {
      a.tls.insecure = true;
    } else if (arg.rfind("--", 0) == 0) {
      SHEFL_ASSIGN_OR_RETURN(const std::string value, NextValue(args, i));
      SHEFL_RETURN_IF_ERROR(ParseFlag(arg, value, a));
    } else if (a.target.empty()) {
      a.target = arg;
    } else {
      return absl::InvalidArgumentError("one HOST:PORT only, got '" + arg + "'");
    }
  }
  if (a.target.empty()) return absl::InvalidArgumentError("HOST:PORT is required");
  return a;
}

// The one health check; exit 0 when SERVING.
int Check(const HealthArgs& a) {
  grpc::ChannelArguments channel_args;
  auto creds = MakeChannelCredentials(a.tls, &channel_args);
  if (!creds.ok()) {
    std::cerr << "shefl health: " << creds.status().message() << "\n";
    return 2;
  }
  auto stub = grpc::health::v1::Health::NewStub(
      grpc::CreateCustomChannel(a.target, *creds, channel_args));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(a.service);
  grpc::health::v1::HealthCheckResponse reply;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(a.timeout_s * 1000)));
  const grpc::Status st = stub->Check(&ctx, req, &reply);
  if (!st.ok()) {
    std::cout << a.target << ": no answer (" << st.error_message() << ")\n";
    return 1;
  }
  std::cout << a.target << ": "
            << grpc::health::v1::HealthCheckResponse::ServingStatus_Name(reply.status())
            << "\n";
  return reply.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

}  // namespace

int HealthCommand(const std::vector<std::string>& args) {
  return RunCommand(args, "health", HealthUsage(), Parse, Check);
}

}  // namespace shefl
