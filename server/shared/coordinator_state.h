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

#include <algorithm>
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
  // What a registering daemon is told the current round is (it takes the
  // rounds before it as over): current_round(), or under round.mode
  // buffered the lowest ticket still open, so that its tasks are redone.
  int64_t first_open_round() const {
    MutexLock lock(mu);
    if (round || tickets.empty()) return round ? round->round() : last_round;
    return tickets.begin()->first;
  }
  std::shared_ptr<RoundState> open_round() const {
    MutexLock lock(mu);
    return round;
  }
  // A task handed out and not yet over, with the round it belongs to.
  struct OpenTask {
    std::shared_ptr<RoundState> round;
    v1::FeedMessage task;
  };
  // The open tasks by client (one each), for re-delivery to a daemon that
  // reconnects mid-round: the open round's, or the tickets in flight.
  std::map<int64_t, OpenTask> open_tasks() const {
    MutexLock lock(mu);
    std::map<int64_t, OpenTask> out;
    for (const auto& [client, t] : tasks) out[client] = {round, t};
    for (const auto& [ticket, t] : tickets) out[t.task.task().client_id()] = t;
    return out;
  }
  // The round numbered `round` while it is open: the synchronous round, or
  // under round.mode buffered the ticket of that number; null otherwise.
  std::shared_ptr<RoundState> round_numbered(int64_t number) const {
    MutexLock lock(mu);
    if (round && round->round() == number) return round;
    auto it = tickets.find(number);
    return it == tickets.end() ? nullptr : it->second.round;
  }
  // round.mode buffered: each task in flight is a round of one task under
  // its own number, its ticket (the wire's `round`; docs/DESIGN.md,
  // "Buffered asynchronous rounds"). Tickets only grow.
  void OpenTicket(std::shared_ptr<RoundState> r, v1::FeedMessage task) {
    const int64_t number = r->round();
    MutexLock lock(mu);
    last_round = std::max(last_round, number);
    tickets[number] = {std::move(r), std::move(task)};
  }
  void CloseTicket(int64_t ticket) {
    MutexLock lock(mu);
    tickets.erase(ticket);
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
  std::map<int64_t, OpenTask> tickets ABSL_GUARDED_BY(mu);
  SecureSessions secure ABSL_GUARDED_BY(mu);
  int64_t last_round ABSL_GUARDED_BY(mu) = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SHARED_COORDINATOR_STATE_H_
