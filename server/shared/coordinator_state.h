// What the coordinator's round loop and its gRPC handlers share: the
// config, the models, the registry, the byte ledger, the metrics and the
// round that is open now.
// It stands below both the gRPC service (server/rpc) and the kinds of
// round (server/round), which both read it.
// Thread-safe: the round slot and the download book take their mutexes; the
// other members are set before the server starts or are thread-safe
// themselves.
#ifndef SHEFL_SERVER_SHARED_COORDINATOR_STATE_H_
#define SHEFL_SERVER_SHARED_COORDINATOR_STATE_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/core/mutex.h"
#include "common/net/accounting.h"
#include "common/net/secure_byte_book.h"
#include "common/net/token_book.h"
#include "server/run/coordinator_metrics.h"
#include "server/run/model_store.h"
#include "server/shared/download_book.h"
#include "server/state/client_registry.h"
#include "server/state/client_reports.h"
#include "server/state/round_state.h"
#include "server/state/secure_session.h"
#include "shefl.pb.h"

namespace shefl {

struct CoordinatorState {
  CoordinatorState(ExperimentConfig cfg, std::unique_ptr<ModelStore> models)
      : config(std::move(cfg)),
        config_yaml(ConfigToYaml(config)),
        store(std::move(models)),
        registry(config.clients.num_clients) {
    if (config.aggregation.robust)
      reports.SetShardMultiple(config.robust.shard_multiple);
  }

  const ExperimentConfig config;
  const std::string config_yaml;
  // The model's flat layout, for a registration that asks (Python clients
  // check their own network against it). Set before the port serves.
  std::vector<v1::TensorLayout> model_layout;
  std::unique_ptr<ModelStore> store;
  ClientRegistry registry;
  ClientReports reports;
  ByteLedger ledger;
  DownloadBook downloads;
  CoordinatorMetrics metrics;
  std::atomic<bool> stop{false};
  // The registration tokens (--token-file; common/net/token_book.h): none
  // asked, the deployment's shared one, or one per daemon. Set before the
  // server starts, read-only after.
  TokenBook tokens;

  // The round being run (1-based); 0 before the first.
  int64_t current_round() const {
    MutexLock lock(mu);
    return round ? round->round() : last_round;
  }
  std::shared_ptr<RoundState> open_round() const {
    MutexLock lock(mu);
    return round;
  }
  // The tasks of the open round, by client, for re-delivery to a daemon
  // that reconnects mid-round.
  std::map<int64_t, v1::FeedMessage> open_tasks() const {
    MutexLock lock(mu);
    return tasks;
  }
  void Open(std::shared_ptr<RoundState> r,
            std::map<int64_t, v1::FeedMessage> t) {
    MutexLock lock(mu);
    round = std::move(r);
    tasks = std::move(t);
  }
  void Finish(int64_t completed_round) {
    MutexLock lock(mu);
    round.reset();
    tasks.clear();
    secure.clear();
    last_round = completed_round;
  }
  // aggregation.secure: the open round's sessions, by model.
  using SecureSessions = std::map<int64_t, std::shared_ptr<SecureSession>>;
  void OpenSecure(SecureSessions s) {
    MutexLock lock(mu);
    secure = std::move(s);
  }
  std::shared_ptr<SecureSession> secure_session(int64_t model) const {
    MutexLock lock(mu);
    auto it = secure.find(model);
    return it == secure.end() ? nullptr : it->second;
  }
  SecureByteBook secure_bytes;

 private:
  mutable Mutex mu;
  std::shared_ptr<RoundState> round ABSL_GUARDED_BY(mu);
  std::map<int64_t, v1::FeedMessage> tasks ABSL_GUARDED_BY(mu);
  SecureSessions secure ABSL_GUARDED_BY(mu);
  int64_t last_round ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SHARED_COORDINATOR_STATE_H_
