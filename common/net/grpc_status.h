// absl::Status <-> grpc::Status. The two share their code numbering, so a
// refusal keeps its code and reason across the wire in both directions.
#ifndef SHEFL_COMMON_NET_GRPC_STATUS_H_
#define SHEFL_COMMON_NET_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include <string>

#include "absl/status/status.h"

namespace shefl {

inline grpc::Status ToGrpc(const absl::Status& st) {
  if (st.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(st.code()),
                      std::string(st.message()));
}

inline absl::Status FromGrpc(const grpc::Status& st) {
  if (st.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(st.error_code()),
                      st.error_message());
}

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_GRPC_STATUS_H_
