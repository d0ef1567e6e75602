// round.mode buffered: the loop that replaces the rounds (docs/DESIGN.md,
// "Buffered asynchronous rounds"; FedBuff, Nguyen et al. 2022).
//
// Cohorts are drawn as a synchronous run draws them (the method's Plan,
// tiers, assignment, per-tier k), and their tasks handed out one at a time
// while fewer than buffered.concurrency are in flight; clients with a task
// are not drawn again. Each task is a round of its own under a ticket
// number (the wire's `round`; tickets only grow), holding the versions of
// the models it was handed. When its updates are in (or its deadline
// passed) each enters its model's buffer (common/fed/update_buffer.h) with
// staleness = the model's applications since; a full buffer is applied as
// one aggregate through the method's RoundKind, recorded as one line of
// rounds.jsonl, and logged to buffer_log.jsonl for --replay. A task's slot
// frees once its updates are applied (or lost), so with every client as
// fast as the next and size = concurrency = the cohort, each buffer holds
// one cohort's updates at staleness 0 and the run equals a synchronous one
// bit for bit. Should every task in flight wait in a buffer that is not
// full (M models share the slots), the fullest buffer is applied early.
//
// Not thread-safe: Coordinator::Run's thread runs it; the handlers reach
// the tickets through CoordinatorState.
#ifndef SHEFL_SERVER_BUFFERED_LOOP_H_
#define SHEFL_SERVER_BUFFERED_LOOP_H_

#include <chrono>
#include <cstdint>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "common/fed/schedule.h"
#include "common/fed/update_buffer.h"
#include "server/coordinator.h"
#include "server/state/round_state.h"

namespace shefl {

class BufferedLoop {
 public:
  explicit BufferedLoop(Coordinator* coordinator);
  // Runs until rounds x M applications, a stop, or an error.
  absl::Status Run();

 private:
  using Clock = std::chrono::steady_clock;
  struct Ticket {
    ClientTask task;
    std::shared_ptr<RoundState> books;
    std::vector<uint64_t> versions;  // of every model, as handed out
    int64_t waiting = 0;  // updates in a buffer, not yet applied
    bool ended = false;   // its updates were taken (or its deadline passed)
  };
  // Hands out queued tasks while a slot is free; false when no client
  // could be drawn.
  void FillSlots();
  void Dispatch(const ClientTask& task, int64_t draw);
  // Takes the updates of tickets that are complete or past their deadline
  // into the buffers, applying each buffer that fills.
  absl::Status CollectEnded();
  absl::Status Take(int64_t number, Ticket& ticket);
  // One application of model m's buffer, with its line and record.
  absl::Status Apply(int64_t model, bool early);
  // Frees the slots of tickets that are done; sends the daemons the
  // highest ticket up to which every ticket is over.
  void Release();
  // Keeps, per model, the versions a ticket in flight may still download.
  void KeepVersions();
  void LogApplication(int64_t model, uint64_t version,
                      const std::vector<UpdateBuffer::Entry>& entries);
  nlohmann::json ApplicationLine(int64_t model, uint64_t version,
                                 const std::vector<UpdateBuffer::Entry>& e,
                                 bool early) const;
  bool Stalled() const;
  int64_t total_applications() const;

  Coordinator& c_;
  const ExperimentConfig& cfg_;
  const int64_t concurrency_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point last_application_ = start_;
  std::map<int64_t, Ticket> tickets_;           // in flight or waiting
  std::deque<std::pair<ClientTask, int64_t>> queued_;  // (task, its draw)
  std::set<int64_t> busy_;                       // clients with a ticket
  std::vector<UpdateBuffer> buffers_;
  CohortShape shape_;
  int64_t next_ticket_ = 1;
  int64_t draws_ = 0;
  int64_t applications_ = 0;
  int64_t stale_ = 0, lost_ = 0, rejected_ = 0, early_ = 0;
  int64_t released_below_ = 0;  // every ticket up to this one is over
  std::ofstream log_;           // buffer_log.jsonl
};

}  // namespace shefl

#endif  // SHEFL_SERVER_BUFFERED_LOOP_H_
