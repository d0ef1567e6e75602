// Builds a Coordinator from its options, in the order start-up must go
// (docs/DESIGN.md, "Trust and faults" and "The contract"): the security
// flags before any data loads; the config and the results folder; the
// models, fresh or from a checkpoint the config in force can continue
// (refused before anything of the run is rewritten); the round's parts
// (scheduler, kind, update source, books); config.yaml; and last the
// servers. A failure at any step returns the error that names its flag or
// key, and nothing has been served.
// Not thread-safe: used once, by Coordinator::Create.
#ifndef SHEFL_SERVER_COORDINATOR_BUILDER_H_
#define SHEFL_SERVER_COORDINATOR_BUILDER_H_

#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/net/token_book.h"
#include "server/coordinator.h"
#include "server/run/coordinator_options.h"
#include "server/run/model_store.h"
#include "server/state/client_registry.h"

namespace shefl {

class CoordinatorBuilder {
 public:
  explicit CoordinatorBuilder(const CoordinatorOptions& options);
  absl::StatusOr<std::unique_ptr<Coordinator>> Build();

 private:
  // --tls-* and --token-file, before any data loads.
  absl::Status ReadSecurity();
  // The config (the run folder's on --resume) with --set, and out_dir.
  absl::Status ResolveConfig();
  // The results folder, the evaluator and the kind of round.
  absl::Status OpenParts();
  // A fresh run's initial models, or the checkpoint's and the history of
  // the rounds before it.
  absl::StatusOr<std::unique_ptr<ModelStore>> LoadModels();
  absl::StatusOr<std::unique_ptr<ModelStore>> Resume();
  absl::Status LoadSourceState();
  // The scheduler, the books of stallers and lost daemons, the shared
  // state, capacity levels, the update source; the kind bound to them.
  absl::Status MakeRoundParts(std::unique_ptr<ModelStore> store);
  void MakeState(std::unique_ptr<ModelStore> store);
  // config.yaml, the run's record of what is in force.
  absl::Status WriteConfig();

  CoordinatorOptions o_;
  std::unique_ptr<Coordinator> c_;
  std::shared_ptr<grpc::ServerCredentials> creds_;
  TokenBook tokens_;
  ExperimentConfig config_;
  bool resume_ = false;
  bool have_checkpoint_ = false;
  std::optional<ClientRegistry::Ownership> ownership_;  // a resumed run's
};

}  // namespace shefl

#endif  // SHEFL_SERVER_COORDINATOR_BUILDER_H_
