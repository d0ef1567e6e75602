// The checks every coordinator RPC makes of its caller before it does any
// work (docs/DESIGN.md, "Trust and faults"): plain functions of the session,
// the peer's identity and the round, so tests hold them without gRPC.
// Pure functions; thread-safe as far as the session and round they read.
#ifndef SHEFL_SERVER_RPC_CALLER_CHECKS_H_
#define SHEFL_SERVER_RPC_CALLER_CHECKS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "server/state/client_registry.h"
#include "server/state/round_state.h"
#include "shefl.pb.h"

namespace shefl {

// PERMISSION_DENIED ("not_owner") when `session` was registered by another
// identity than `peer` ("cert:..." under mutual TLS, else "token" or
// "anonymous"); OK for a null session (the next check refuses it).
absl::Status CheckCaller(const DaemonSession* session, const std::string& peer);

// UNAUTHENTICATED without a live session, PERMISSION_DENIED ("not_owner")
// when the session does not host `client`.
absl::Status CheckOwner(const DaemonSession* session, int64_t client);

// The round a client's task is in (the open round; under round.mode
// buffered, the client's ticket); null when it has none.
using RoundOfClient = std::function<std::shared_ptr<RoundState>(int64_t)>;

// Every client a shared download also serves must be the session's,
// assigned the model at the version in its own round, and named once.
absl::Status CheckAlsoFor(const DaemonSession* session,
                          const RoundOfClient& round_of,
                          const v1::DownloadRequest& req);

}  // namespace shefl

#endif  // SHEFL_SERVER_RPC_CALLER_CHECKS_H_
