// shefl-coordinator: holds the M global models, runs the rounds, and
// serves the daemons over gRPC. Run() is the round state machine; see
// coordinator.cc, which reads top to bottom as DESIGN.md section 1 does.
// Not thread-safe: Run() is the round loop; what it shares with the gRPC
// handlers is CoordinatorState's, which is thread-safe.
#ifndef SHEFL_SERVER_COORDINATOR_H_
#define SHEFL_SERVER_COORDINATOR_H_

#include <grpcpp/server.h>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "common/net/metrics_server.h"
#include "common/fed/schedule.h"
#include "server/capacity_plan.h"
#include "server/coordinator_service.h"
#include "common/net/tls.h"
#include "server/coordinator_state.h"
#include "server/evaluator.h"
#include "server/fens_ensemble.h"
#include "server/health_port.h"
#include "server/run_results.h"
#include "server/staller_book.h"
#include "common/fed/server_optimizer.h"

namespace shefl {

struct CoordinatorOptions {
  std::string config_path;
  std::vector<std::string> overrides;  // --set key=value
  std::string listen = "127.0.0.1:50051";
  std::string metrics_listen;
  // A plaintext port serving only the gRPC health service, for probes
  // that cannot speak TLS (Kubernetes' native gRPC probes). Empty: none.
  std::string health_listen;
  std::string out_dir;     // overrides config out_dir
  std::string resume_dir;  // continue this run from its checkpoint
  // With config_path: resume the results folder's run when it has this
  // config, refuse when it has another (server/run_folder.h).
  bool continue_run = false;
  int threads = 0;         // torch threads for evaluation; 0: all cores
  // Evaluation's batches on this many threads (each with `threads` torch
  // threads) at this much lower priority: common/learn/eval_batches.h.
  int eval_threads = 1;
  int eval_nice = 0;
  // After the run, keep serving /metrics this long (SIGTERM ends it), so a
  // scraper sees the final values.
  double metrics_linger_s = 0;
  // TLS certificate and key, client CA (mutual TLS), token, --insecure.
  TlsOptions tls;
  // Calls open at once per peer host and per identity
  // (server/call_limits.h); 0: the defaults. Tests lower them.
  int max_calls_per_host = 0;
  int max_calls_per_identity = 0;
};

class Coordinator {
 public:
  static absl::StatusOr<std::unique_ptr<Coordinator>> Create(
      const CoordinatorOptions& options);
  ~Coordinator();

  // Runs every remaining round, then tells the daemons to stop.
  absl::Status Run();
  // Asks Run() to stop after checkpointing (signal-safe: sets a flag).
  void RequestStop() { state_->stop = true; }

  int listening_port() const { return port_; }
  int health_port() const { return health_port_ ? health_port_->port() : 0; }
  // For tests and tools in the same process.
  CoordinatorState& state() { return *state_; }
  const std::string& results_dir() const { return results_->dir(); }

 private:
  Coordinator() = default;
  absl::Status StartServers(
      const CoordinatorOptions& options,
      const std::shared_ptr<grpc::ServerCredentials>& creds);
  void WaitForDaemons(bool first);
  absl::Status RunRound(int64_t t);
  void LogRoundOpen(const RoundPlan& plan, int64_t round) const;
  std::map<int64_t, v1::FeedMessage> MakeTasks(const RoundPlan& plan,
                                               int64_t round) const;
  void PushTasks(const std::map<int64_t, v1::FeedMessage>& tasks);
  // Strikes the round's silent clients when it ran to its deadline;
  // the round's `stallers` record.
  nlohmann::json RecordStallers(const RoundState& rs, int64_t round,
                                bool deadline);
  // Applies the round's aggregates; returns how many were not published
  // (a non-finite weight: the previous model stays).
  absl::StatusOr<int64_t> Aggregate(std::vector<ModelAggregator>& aggregators);
  // FENS: keeps each client's model (global + its update) as a member
  // instead of folding the updates (server/fens_ensemble.h).
  absl::Status KeepFensMembers(const std::vector<ModelAggregator>& aggregators);
  nlohmann::json RoundLine(const RoundState& state, double wall,
                           double own_seconds) const;
  void RecordEvaluation(const EvalResult& r, int64_t round);
  // What a closed round still has to do: evaluate the models it
  // published, write its line, checkpoint.
  struct PendingRecord {
    int64_t round = 0;
    std::vector<ModelSnapshot> models;
    std::vector<uint64_t> versions;
    bool evaluate = false;
    double wall = 0, own = 0;
    nlohmann::json line;  // without the evaluation's figures
    std::vector<int64_t> fens_clients;  // FENS: whose model each member is
    // The server optimiser's state after this round (null when none).
    std::shared_ptr<const ServerOptimizer> optimizer;
    std::string summary;  // for the log line
  };
  absl::Status Record(const PendingRecord& rec);
  // Waits for the previous round's Record; its status.
  absl::Status WaitForRecord();
  void AddEvaluation(nlohmann::json* line) const;
  uint64_t RecordedSum(const char* key) const;
  absl::Status Finish(double wall_seconds);
  void ShutdownDaemons();
  void LingerForScrapes();

  std::unique_ptr<CoordinatorState> state_;
  std::unique_ptr<Evaluator> evaluator_;
  // method fens: the ensemble of client models and its aggregator; null
  // for every other method. fens_members_ / fens_clients_ are written by
  // RunRound before the round's Record starts.
  std::unique_ptr<FensEnsemble> fens_;
  // aggregation.server_optimizer's state (common/fed/server_optimizer.h);
  // stepped by RunRound only.
  std::unique_ptr<ServerOptimizer> server_opt_;
  std::vector<ModelSnapshot> fens_members_;
  std::vector<int64_t> fens_clients_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<CapacityPlan> capacity_;  // capacity levels, HASA
  std::unique_ptr<StallerBook> stallers_;   // strikes; the round loop's
  std::unique_ptr<RunResults> results_;
  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HealthPort> health_port_;  // --health-listen
  std::unique_ptr<MetricsServer> exposer_;
  int port_ = 0;
  double max_abs_weight_ = 0;  // over the members, after Aggregate
  // Registration of this sitting (summary.json `registration`): how long
  // until every client (or the quorum) was connected, and the resident
  // memory that took (the registry's cost per client).
  nlohmann::json registration_;
  int64_t first_round_ = 0;  // t of the first round this process runs
  double metrics_linger_s_ = 0;

  // The previous round's Record, running beside this round. While this
  // process waits for it, training has stopped: its evaluation's helper
  // threads join in (--eval-threads, common/learn/eval_batches.h).
  std::future<absl::Status> pending_record_;
  std::atomic<bool> record_waited_{false};

  // Evaluation history, for rounds.jsonl and summary.json. Written by
  // Record only; RunRound never reads it, so the two may overlap.
  EvalResult last_eval_;
  bool evaluated_ = false;
  double best_accuracy_ = 0;
  int64_t rounds_to_threshold_ = -1;
  double prior_wall_seconds_ = 0;  // from before a resume
  ByteCounts prior_bytes_;         // rounds recorded before a resume
};

}  // namespace shefl

#endif  // SHEFL_SERVER_COORDINATOR_H_
