// Runs the daemon's work items: for each (client, model) item, the model
// version it starts from (fetched once for every client of this daemon
// that needs it, client/model_cache.h), local training on the client's
// shard, delta, top-k with error feedback (client/local_trainer.h over
// client/residual_book.h), the upload (client/task_uploader.h), the
// coordinator's answer settling the residual, and the books: training time
// and samples of the round, shefl_client_train_seconds, and the task's log
// line once its last item is done.
//
// Run takes a batch of items, each in three steps (Begin: checks and the
// model version; local training; Deliver: upload and books). Where the
// daemon stacks its round (train.stacking; LocalTrainer::stacks) a batch
// of several items runs Begin for every item, trains them as one stack
// (LocalTrainer::TrainCohort) and Delivers each; otherwise one after
// another. An item that fails at any step costs only itself.
//
// Thread-safe: Run goes on concurrently in distinct slots (one batch at a
// time per slot and per (client, model)); the model cache, the books and
// the task progress lock for themselves; the rest is fixed at
// construction. Expect runs on the feed thread beside Run.
#ifndef SHEFL_CLIENT_TASK_TRAINER_H_
#define SHEFL_CLIENT_TASK_TRAINER_H_

#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "client/adversary.h"
#include "client/coordinator_link.h"
#include "client/local_trainer.h"
#include "client/model_cache.h"
#include "client/model_download.h"
#include "client/round_books.h"
#include "client/secure_sessions.h"
#include "client/task_queue.h"
#include "client/task_uploader.h"

namespace shefl {

class TaskTrainer {
 public:
  // What the trainer works with; every pointer outlives it.
  struct Parts {
    std::string name;  // the daemon's, for its log lines
    std::unique_ptr<LocalTrainer> local;
    std::optional<Adversary> adversary;  // --adversary; unset: honest
    const TaskQueue* queue = nullptr;    // which rounds are over; bursts
    RoundBooks* books = nullptr;
    const ModelDownloader* downloader = nullptr;
    const TaskUploader* uploader = nullptr;
    // aggregation.secure: trained deltas go to the round's secure session
    // instead of an upload; null otherwise.
    SecureSessions* secure = nullptr;
    prometheus::Histogram* train_seconds = nullptr;
    prometheus::Gauge* resident_memory = nullptr;
    // --slowdown X: each item's training takes X times as long (the item
    // waits (X - 1) x its training time before its upload).
    double slowdown = 1;
    // round.mode buffered: tasks come one at a time, not in a round's
    // burst, so a fetch does not wait for one (TaskQueue::AwaitTaskBurst).
    bool task_bursts = true;
  };
  explicit TaskTrainer(Parts parts) : p_(std::move(parts)) {}

  const LocalTrainer& local() const { return *p_.local; }
  // An item's expected work: the client's samples times its passes.
  double ExpectedWork(const v1::Task& task) const;
  // A task arrived: the model cache learns the versions its client needs.
  void Expect(const v1::Task& task);
  // A new session: what the last one fetched (or failed to) is gone.
  void NewSession() { models_.Clear(); }

  // Runs `batch` in `slot`, each item to its upload and its books.
  void Run(const CoordinatorLink& link, absl::Span<const WorkItem> batch,
           int slot);

 private:
  // The model version `w` starts from; nullopt when the item ended here
  // (skipped, stalled or not downloaded: logged and finished).
  std::optional<ModelCache::Weights> Begin(const CoordinatorLink& link,
                                           const WorkItem& w);
  // Uploads the update, settles the residual, books the item.
  void Deliver(const CoordinatorLink& link, const WorkItem& w,
               const TrainedUpdate& update);
  void RunOne(const CoordinatorLink& link, const WorkItem& w, int slot);
  void RunStacked(const CoordinatorLink& link, absl::Span<const WorkItem> batch);
  void Fail(const CoordinatorLink& link, const WorkItem& w,
            absl::string_view what, const absl::Status& st);
  void Settle(const WorkItem& w, const absl::Status& sent);
  // The task's line, once its last item is done.
  void Finish(const WorkItem& w, bool sent, double loss);

  const Parts p_;
  ModelCache models_;  // each model version fetched once for all clients
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_TASK_TRAINER_H_
