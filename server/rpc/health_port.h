// The server behind --health-listen: plaintext, and nothing on it but the
// gRPC health service (grpc.health.v1 Check), for probes that cannot speak
// TLS. Its own implementation rather than gRPC's default service: that one
// is not added to a server without other services.
// Thread-safe: gRPC calls Check on its threads; `serving` must be thread-
// safe.
#ifndef SHEFL_SERVER_RPC_HEALTH_PORT_H_
#define SHEFL_SERVER_RPC_HEALTH_PORT_H_

#include <grpcpp/server.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "health.grpc.pb.h"

namespace shefl {

class HealthPort {
 public:
  // Listens on `listen` ("0.0.0.0:8080"; port 0 picks one); Check says
  // SERVING while `serving()` holds, for "" and the coordinator's service.
  static absl::StatusOr<std::unique_ptr<HealthPort>> Start(
      const std::string& listen, std::function<bool()> serving);
  ~HealthPort();
  int port() const { return port_; }

 private:
  class Service final : public grpc::health::v1::Health::Service {
   public:
    explicit Service(std::function<bool()> serving) : serving_(std::move(serving)) {}
    grpc::Status Check(grpc::ServerContext* ctx,
                       const grpc::health::v1::HealthCheckRequest* req,
                       grpc::health::v1::HealthCheckResponse* reply) override;

   private:
    std::function<bool()> serving_;
  };

  explicit HealthPort(std::function<bool()> serving) : service_(std::move(serving)) {}
  Service service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RPC_HEALTH_PORT_H_
