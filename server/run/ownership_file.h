// checkpoints/ownership.json: which identity owns which client ids and
// daemon names (ClientRegistry::Ownership), written beside each checkpoint
// and read on --resume, so a restarted coordinator keeps every daemon's
// clients for the identity that first registered them.
// The file: {"identities": [...], "client_owner": [index by client id, -1
// none], "names": {name: identity}}. The form before it ({"clients": {id:
// identity}, "names": ...}) is read too, so older runs resume.
// Free functions; thread-compatible.
#ifndef SHEFL_SERVER_RUN_OWNERSHIP_FILE_H_
#define SHEFL_SERVER_RUN_OWNERSHIP_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/state/client_registry.h"

namespace shefl {

absl::Status SaveOwnership(const std::string& path,
                           const ClientRegistry::Ownership& o);
// NOT_FOUND when there is no file (a run from before it existed);
// DATA_LOSS naming the file when it cannot be read as ownership.
absl::StatusOr<ClientRegistry::Ownership> LoadOwnership(const std::string& path);

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_OWNERSHIP_FILE_H_
