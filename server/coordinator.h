// shefl-coordinator: holds the M global models, runs the rounds, and
// serves the daemons over gRPC. Run() is the round state machine; see
// coordinator.cc, which reads top to bottom as docs/DESIGN.md's round
// does. What a method's round does with the updates is its RoundKind's
// (server/round/round_kind.h), and how the updates arrive is its
// UpdateSource's (server/source/update_source.h): the Coordinator names
// no method and no transport.
// Not thread-safe: Run() is the round loop; what it shares with the gRPC
// handlers is CoordinatorState's, which is thread-safe.
#ifndef SHEFL_SERVER_COORDINATOR_H_
#define SHEFL_SERVER_COORDINATOR_H_

#include <grpcpp/server.h>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "common/fed/schedule.h"
#include "common/net/metrics_server.h"
#include "server/round/capacity_plan.h"
#include "server/round/evaluator.h"
#include "server/round/round_kind.h"
#include "server/rpc/coordinator_service.h"
#include "server/rpc/health_port.h"
#include "server/run/coordinator_options.h"
#include "server/run/run_results.h"
#include "server/shared/coordinator_state.h"
#include "server/source/update_source.h"
#include "server/state/lost_daemons.h"
#include "server/state/staller_book.h"

namespace shefl {

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
  friend class CoordinatorBuilder;  // Create's steps (coordinator_builder.h)
  // round.mode buffered's loop, in place of the rounds (buffered_loop.h).
  friend class BufferedLoop;
  // Seconds since `t` on the steady clock (round and wait timings).
  static double Since(std::chrono::steady_clock::time_point t);
  Coordinator() = default;
  absl::Status StartServers(
      const CoordinatorOptions& options,
      const std::shared_ptr<grpc::ServerCredentials>& creds);
  // Waits until round `round` (from 1) may open; an error once
  // clients.give_up_after_s has passed below the quorum.
  absl::Status WaitForDaemons(int64_t round);
  std::string WaitingFor(bool first, int64_t connected, int64_t quorum) const;
  std::vector<int64_t> ConnectedHosts() const;
  void NoteLost(int64_t round);
  // Ends the run on `why`, leaving it resumable.
  absl::Status GiveUp(const absl::Status& why);
  // One round's working set, from its plan to its record.
  struct RoundRun {
    int64_t round = 0;  // from 1
    RoundPlan plan;
    std::shared_ptr<RoundState> books;
    ClientRegistry::Missing missing;  // as the round opened
    std::chrono::steady_clock::time_point start, deadline;
    double own = 0, waited = 0;  // seconds: opening; the wait
    bool complete = false;       // every update came in
    nlohmann::json stallers;
    ClosedRound closed;
  };
  // The round's five steps (coordinator.cc).
  absl::Status RunRound(int64_t t);
  RoundRun PlanRound(int64_t t);
  void OpenRound(RoundRun& r);
  absl::StatusOr<bool> CloseRound(RoundRun& r);
  absl::Status StartRecord(RoundRun& r,
                           std::chrono::steady_clock::time_point close_start);
  void LogRoundOpen(const RoundPlan& plan, int64_t round) const;
  std::map<int64_t, v1::FeedMessage> MakeTasks(const RoundPlan& plan,
                                               int64_t round) const;
  void PushTasks(const std::map<int64_t, v1::FeedMessage>& tasks);
  // Strikes the round's silent clients when it ran to its deadline;
  // the round's `stallers` record.
  nlohmann::json RecordStallers(const RoundState& rs, int64_t round,
                                bool deadline);
  nlohmann::json RoundLine(const RoundState& state, double wall,
                           double own_seconds) const;
  void RecordEvaluation(const EvalResult& r, int64_t round);
  // What a closed round still has to do: evaluate the models it
  // published, write its line, checkpoint.
  struct PendingRecord {
    int64_t round = 0;
    ClosedRound closed;  // the models, and how to evaluate them
    bool evaluate = false;
    double wall = 0, own = 0;
    nlohmann::json line;  // without the evaluation's figures
    std::string source_state;  // UpdateSource::SaveState, for the checkpoint
    std::string summary;  // for the log line
  };
  // The round's line before its evaluation: RoundLine and what the round
  // loop adds (timings, stallers, downloads); coordinator_record.cc.
  nlohmann::json PendingLine(const RoundRun& r, const PendingRecord& rec,
                             double record_wait) const;
  std::string RecordSummary(const RoundRun& r, const PendingRecord& rec) const;
  absl::Status Record(const PendingRecord& rec);
  // Waits for the previous round's Record; its status.
  absl::Status WaitForRecord();
  void AddEvaluation(nlohmann::json* line, bool now) const;
  absl::Status Finish(double wall_seconds);
  void ShutdownDaemons();
  void LingerForScrapes();

  std::unique_ptr<CoordinatorState> state_;
  std::unique_ptr<Evaluator> evaluator_;
  // What the method's round does with the updates (Plan and Close run on
  // the round loop only).
  std::unique_ptr<RoundKind> kind_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<CapacityPlan> capacity_;  // capacity levels, HASA
  std::unique_ptr<UpdateSource> source_;    // how the updates arrive
  std::unique_ptr<StallerBook> stallers_;   // strikes; the round loop's
  std::unique_ptr<LostDaemons> lost_;       // the round loop's
  std::unique_ptr<RunResults> results_;
  std::unique_ptr<CoordinatorService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<HealthPort> health_port_;  // --health-listen
  std::unique_ptr<MetricsServer> exposer_;
  int port_ = 0;
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
  int64_t last_eval_round_ = 0;  // the round last_eval_ is of; 0: none
  double best_accuracy_ = 0;
  int64_t rounds_to_threshold_ = -1;
  double prior_wall_seconds_ = 0;  // from before a resume
  ByteCounts prior_bytes_;         // rounds recorded before a resume
  // round.mode buffered: what summary.json adds (applications, tickets,
  // refusals as stale), and the rounds it counts as done
  // (applications / M); unset in a synchronous run.
  nlohmann::json buffered_summary_;
  int64_t buffered_rounds_done_ = -1;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_COORDINATOR_H_
