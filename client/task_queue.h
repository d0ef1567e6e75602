// The daemon's work between the task feed and its worker threads.
//
// What arrives from the feed: tasks (one client, one or more models) and
// round ends. Each model of a task is one work item (an HPC's members are
// separate items, so they train side by side); items are queued behind
// the last round end, longest first (an item's expected work: the
// client's samples times its passes), so the long HPC members start early
// and the short ones fill in. A round end is kept in the queue in arrival
// order; a round is done once its end has been taken and no item of it or
// of an earlier round is in flight, and then, in round order, the
// listener's on_round_done writes its line.
//
// Cancellation: an item of a round the coordinator has closed (RoundClosed)
// is skipped by whoever takes it; when the session ends (Close) the items
// still queued are dropped unrun, while the round ends among them are
// still honoured. Tasks are not deduplicated: the coordinator hands a
// (client, round) out once per session, and a new session starts empty.
//
// Thread-safe: the feed thread pushes, worker threads Take and Done
// concurrently, all under mu_. The listener's callbacks run with mu_ held,
// in the order the events happen; they must not call back into the queue.
#ifndef SHEFL_CLIENT_TASK_QUEUE_H_
#define SHEFL_CLIENT_TASK_QUEUE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "common/core/mutex.h"
#include "shefl.pb.h"

namespace shefl {

// Monotonic nanoseconds: the clock of the queue's burst wait and of the
// session's heartbeat silence.
int64_t SteadyNs();

// What the items of one task share, so that the per-task log line is
// written by the item that finishes last. Thread-safe (mu_).
class TaskProgress {
 public:
  struct Summary {
    int sent = 0;         // items whose upload the coordinator accepted
    double mean_loss = 0;  // over the sent items; 0 if none
    double seconds = 0;    // since the task arrived
  };
  explicit TaskProgress(int items)
      : start_(std::chrono::steady_clock::now()), remaining_(items) {}
  // Records one finished item; the summary when it was the last.
  std::optional<Summary> Finish(bool sent, double loss);

 private:
  const std::chrono::steady_clock::time_point start_;
  Mutex mu_;
  int remaining_ ABSL_GUARDED_BY(mu_);
  int sent_ ABSL_GUARDED_BY(mu_) = 0;
  double loss_ ABSL_GUARDED_BY(mu_) = 0;
};

// One model of one task. A plain value.
struct WorkItem {
  std::shared_ptr<const v1::Task> task;
  int model_index = 0;
  double expected_work = 0;  // samples x passes: longest first
  std::shared_ptr<TaskProgress> progress;

  int64_t round() const { return static_cast<int64_t>(task->round()); }
  const v1::ModelTask& model() const { return task->models(model_index); }
};

class TaskQueue {
 public:
  struct Listener {
    // busy: the first item went in flight; !busy: the last one came back.
    std::function<void(bool busy)> on_busy;
    // Rounds in order, each once its end is taken and its items are done.
    std::function<void(int64_t round)> on_round_done;
  };
  explicit TaskQueue(Listener listener) : listener_(std::move(listener)) {}

  // A session starts: Take blocks again; rounds up to `closed_round` are
  // over (a coordinator resumed from a checkpoint runs again a round whose
  // end it had announced, so the session's registration says).
  void Open(int64_t closed_round);
  // The session ended: queued items are dropped, Take returns nullopt
  // once the queue is empty. Wakes every waiter.
  void Close();

  // When the feed last brought a task: see AwaitTaskBurst.
  void NoteTaskArrival();
  // Queues one item per model of `task` (none for a task without models).
  void PushTask(v1::Task task, double expected_work);
  // The coordinator closed `round`: its items left are skipped, and its
  // line is written once the items in flight are done.
  void PushRoundEnd(int64_t round);

  // The next item to run, waiting for one; nullopt once closed and empty.
  // The item counts as in flight until Done.
  std::optional<WorkItem> Take();
  // For a daemon that stacks its round: the next item and, once the
  // round's burst of tasks is in (AwaitTaskBurst), every other item of its
  // round still queued, all in flight until Done. Empty once closed and
  // empty. Meant for one worker: another's Take could split the round.
  std::vector<WorkItem> TakeRound();
  void Done(const WorkItem& item);
  // Writes the lines of ended rounds with no item in flight (session end).
  void FlushRoundEnds();

  // Whether the coordinator has said `round` is over.
  bool RoundClosed(int64_t round) const;
  // A round's tasks come in one burst; returns once no task has arrived
  // for 30 ms (at most 1 s), so that a model fetch covers every client of
  // this daemon that needs the version. The burst lasts microseconds to
  // milliseconds; only the physical download bytes depend on it, never a
  // result.
  void AwaitTaskBurst() const;
  // Waits up to `d` or until Close; returns whether the queue is closed.
  bool WaitClosed(std::chrono::milliseconds d);

  size_t queued() const;  // items and round ends (for tests)

 private:
  struct Entry {
    std::optional<WorkItem> item;  // unset: the end of `round`
    int64_t round = 0;
  };
  int InFlightUpToLocked(int64_t round) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FlushRoundEndsLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Listener listener_;
  std::atomic<int64_t> last_task_ns_{0};  // steady clock
  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Entry> queue_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, int> in_flight_ ABSL_GUARDED_BY(mu_);  // round -> items
  std::deque<int64_t> ended_rounds_ ABSL_GUARDED_BY(mu_);  // lines not written
  int64_t closed_round_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_TASK_QUEUE_H_
