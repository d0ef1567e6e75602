#include "server/rpc/health_port.h"

#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "common/net/keepalive.h"

namespace shefl {

using grpc::health::v1::HealthCheckResponse;

grpc::Status HealthPort::Service::Check(
    grpc::ServerContext*, const grpc::health::v1::HealthCheckRequest* req,
    HealthCheckResponse* reply) {
  if (!req->service().empty() && req->service() != "shefl.v1.Coordinator")
    return grpc::Status(grpc::StatusCode::NOT_FOUND,
                        "unknown service " + req->service().substr(0, 128));
  reply->set_status(serving_() ? HealthCheckResponse::SERVING
                               : HealthCheckResponse::NOT_SERVING);
  return grpc::Status::OK;
}

absl::StatusOr<std::unique_ptr<HealthPort>> HealthPort::Start(
    const std::string& listen, std::function<bool()> serving) {
  std::unique_ptr<HealthPort> h(new HealthPort(std::move(serving)));
  grpc::ServerBuilder builder;
  // Ours instead of gRPC's default health service (on for the main port).
  builder.SetOption(std::make_unique<grpc::HealthCheckServiceServerBuilderOption>(nullptr));
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &h->port_);
  // Plaintext and open to anyone who reaches it: a connection cannot hold
  // on for ever, nor a crowd of them take every thread.
  AddProbePortLimits(&builder);
  builder.RegisterService(&h->service_);
  h->server_ = builder.BuildAndStart();
  if (!h->server_ || h->port_ == 0)
    return absl::UnavailableError(
        absl::StrCat("--health-listen ", listen,
                     ": cannot listen there: the port is in use or the "
                     "address is not this machine's"));
  return h;
}

HealthPort::~HealthPort() {
  if (server_) server_->Shutdown(std::chrono::system_clock::now());
}

}  // namespace shefl
