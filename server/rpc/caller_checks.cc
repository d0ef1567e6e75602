#include "server/rpc/caller_checks.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/net/grpc_status.h"

namespace shefl {

// A session id is a bearer credential only in the hands of the identity
// that registered it (docs/DESIGN.md, "Trust and faults"): under mutual TLS a peer with
// another certificate that learned the id (a log, a copied file) is
// refused, as a session naming a client it does not host is. Without
// mutual TLS every peer is the same identity and this admits it.
absl::Status CheckCaller(const DaemonSession* session,
                         const std::string& peer) {
  if (session && session->identity != peer)
    return WithReason(absl::PermissionDeniedError(
                          "the session belongs to another identity"),
                      "not_owner");
  return absl::OkStatus();
}

absl::Status CheckOwner(const DaemonSession* session, int64_t client) {
  if (!session) return absl::UnauthenticatedError("unknown session");
  if (!session->Hosts(client))
    return WithReason(absl::PermissionDeniedError(absl::StrCat(
                          "daemon '", LogSafe(session->name),
                          "' does not host client ", client)),
                      "not_owner");
  return absl::OkStatus();
}


// Every client a shared download also serves must be this session's and
// assigned the model, named once.
absl::Status CheckAlsoFor(const DaemonSession* session,
                          const RoundOfClient& round_of,
                          const v1::DownloadRequest& req) {
  std::set<int64_t> seen = {static_cast<int64_t>(req.client_id())};
  for (uint32_t c : req.also_for_clients()) {
    if (!seen.insert(c).second)
      return absl::InvalidArgumentError(
          absl::StrCat("download: client ", c, " named twice"));
    SHEFL_RETURN_IF_ERROR(CheckOwner(session, c));
    const std::shared_ptr<RoundState> state = round_of(c);
    if (!state)
      return absl::PermissionDeniedError(
          absl::StrCat("download: client ", c, " has no task"));
    SHEFL_RETURN_IF_ERROR(
        state->CheckAssigned(c, req.model_id(), req.model_version()));
  }
  return absl::OkStatus();
}

}  // namespace shefl
