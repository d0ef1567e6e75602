// What every call of one session to the coordinator needs: the stub of the
// session's channel, the session id the coordinator gave at registration,
// and the run's token. A session builds one after Register and hands it to
// its worker and heartbeat threads.
// Thread-safe: immutable once built (the stub's calls are thread-safe).
#ifndef SHEFL_CLIENT_COORDINATOR_LINK_H_
#define SHEFL_CLIENT_COORDINATOR_LINK_H_

#include <grpcpp/client_context.h>

#include <string>

#include "common/net/call_metadata.h"
#include "shefl.grpc.pb.h"

namespace shefl {

struct CoordinatorLink {
  v1::Coordinator::Stub* stub = nullptr;
  std::string session_id;
  std::string token;  // empty: the run has none

  // The token as call metadata (common/net/call_metadata.h), on every call
  // after Register. The token only: the session id is in every request
  // already, and a header sent on every call costs bytes the books do not
  // hold (HPACK sends a repeated one as an index of a byte or two; a run
  // without a token sends nothing extra).
  void AddCallMetadata(grpc::ClientContext* ctx) const {
    if (!token.empty()) ctx->AddMetadata(kTokenMetadata, token);
  }
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_COORDINATOR_LINK_H_
