// What the coordinator's round loop and its gRPC handlers share: the
// config, the models, the registry, the byte ledger, the metrics and the
// round that is open now.
#ifndef SHEFL_SERVER_COORDINATOR_STATE_H_
#define SHEFL_SERVER_COORDINATOR_STATE_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/accounting.h"
#include "common/config.h"
#include "server/client_registry.h"
#include "server/coordinator_metrics.h"
#include "server/model_store.h"
#include "server/round_state.h"

namespace shefl {

struct CoordinatorState {
  CoordinatorState(ExperimentConfig cfg, std::unique_ptr<ModelStore> models)
      : config(std::move(cfg)),
        config_yaml(ConfigToYaml(config)),
        store(std::move(models)),
        registry(config.clients.num_clients) {}

  const ExperimentConfig config;
  const std::string config_yaml;
  std::unique_ptr<ModelStore> store;
  ClientRegistry registry;
  ByteLedger ledger;
  CoordinatorMetrics metrics;
  std::atomic<bool> stop{false};
  // The deployment's registration token (--token-file); empty: none asked.
  // Set before the server starts, read-only after.
  std::string token;

  // The round being run (1-based); 0 before the first.
  int64_t current_round() const {
    std::lock_guard<std::mutex> lock(mu);
    return round ? round->round() : last_round;
  }
  std::shared_ptr<RoundState> open_round() const {
    std::lock_guard<std::mutex> lock(mu);
    return round;
  }
  // The tasks of the open round, by client, for re-delivery to a daemon
  // that reconnects mid-round.
  std::map<int64_t, v1::FeedMessage> open_tasks() const {
    std::lock_guard<std::mutex> lock(mu);
    return tasks;
  }
  void Open(std::shared_ptr<RoundState> r,
            std::map<int64_t, v1::FeedMessage> t) {
    std::lock_guard<std::mutex> lock(mu);
    round = std::move(r);
    tasks = std::move(t);
  }
  void Finish(int64_t completed_round) {
    std::lock_guard<std::mutex> lock(mu);
    round.reset();
    tasks.clear();
    last_round = completed_round;
  }

 private:
  mutable std::mutex mu;
  std::shared_ptr<RoundState> round;
  std::map<int64_t, v1::FeedMessage> tasks;
  int64_t last_round = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_COORDINATOR_STATE_H_
