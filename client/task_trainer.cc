#include "client/task_trainer.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/log.h"
#include "common/core/resources.h"

namespace shefl {

namespace {

TaskSettings SettingsOf(const v1::Task& task) {
  TaskSettings s;
  s.round = static_cast<int64_t>(task.round());
  s.seed_round = static_cast<int64_t>(task.seed_round());
  s.lr = task.train().lr();
  s.local_epochs = task.train().local_epochs();
  s.local_steps = task.train().local_steps();
  s.batch_size = std::max<int64_t>(1, task.train().batch_size());
  s.prox_mu = task.train().prox_mu();
  return s;
}

}  // namespace

double TaskTrainer::ExpectedWork(const v1::Task& task) const {
  const double passes =
      task.train().local_steps() > 0
          ? task.train().local_steps()
          : std::max<uint64_t>(1, task.train().local_epochs());
  return static_cast<double>(p_.local->NumSamples(task.client_id())) * passes;
}

void TaskTrainer::Expect(const v1::Task& task) {
  for (const v1::ModelTask& mt : task.models())
    models_.Expect(mt.model_id(), mt.model_version(), task.client_id());
}

void TaskTrainer::Run(const CoordinatorLink& link,
                      absl::Span<const WorkItem> batch, int slot) {
  if (batch.size() < 2 || !p_.local->stacks()) {
    for (const WorkItem& w : batch) RunOne(link, w, slot);
    return;
  }
  RunStacked(link, batch);
}

// Begin for every item, one stacked training for those that may go on,
// then each one's upload and books.
void TaskTrainer::RunStacked(const CoordinatorLink& link,
                             absl::Span<const WorkItem> batch) {
  std::vector<const WorkItem*> ready;
  std::vector<ModelCache::Weights> globals;
  for (const WorkItem& w : batch) {
    std::optional<ModelCache::Weights> global = Begin(link, w);
    if (!global) continue;
    ready.push_back(&w);
    globals.push_back(*std::move(global));
  }
  std::vector<LocalTrainer::CohortItem> items;
  for (size_t i = 0; i < ready.size(); ++i) {
    const v1::ModelTask& mt = ready[i]->model();
    items.push_back({ready[i]->task->client_id(), mt.model_id(),
                     globals[i].get(), static_cast<int64_t>(mt.k()),
                     SettingsOf(*ready[i]->task)});
  }
  std::vector<absl::StatusOr<TrainedUpdate>> updates =
      p_.local->TrainCohort(items);
  for (size_t i = 0; i < ready.size(); ++i) {
    if (!updates[i].ok()) {
      Fail(link, *ready[i], "", updates[i].status());
      continue;
    }
    Deliver(link, *ready[i], *updates[i]);
  }
}

void TaskTrainer::RunOne(const CoordinatorLink& link, const WorkItem& w,
                         int slot) {
  const std::optional<ModelCache::Weights> global = Begin(link, w);
  if (!global) return;
  const v1::ModelTask& mt = w.model();
  auto update = p_.local->Train(slot, w.task->client_id(), mt.model_id(),
                                **global, static_cast<int64_t>(mt.k()),
                                SettingsOf(*w.task));
  if (!update.ok()) return Fail(link, w, "", update.status());
  Deliver(link, w, *update);
}

// The model version is fetched once for all clients of this daemon that
// need it, after the round's burst of tasks has told the cache who they are.
std::optional<ModelCache::Weights> TaskTrainer::Begin(
    const CoordinatorLink& link, const WorkItem& w) {
  const v1::Task& task = *w.task;
  const v1::ModelTask& mt = w.model();
  if (p_.queue->RoundClosed(w.round())) {
    Fail(link, w, "skipped: ",
         absl::CancelledError(absl::StrCat("round ", task.round(), " is over")));
    return std::nullopt;
  }
  if (p_.adversary && p_.adversary->Stalls()) {
    Fail(link, w, "", absl::CancelledError("--adversary stall: not answered"));
    return std::nullopt;
  }
  if (p_.task_bursts) p_.queue->AwaitTaskBurst();
  auto global = models_.Get(
      mt.model_id(), mt.model_version(), task.client_id(),
      [&](const std::vector<int64_t>& also_for) {
        return p_.downloader->Fetch(link, task, mt, also_for,
                                    static_cast<uint64_t>(p_.local->dim()));
      });
  if (!global.ok()) {
    Fail(link, w, "download failed: ", global.status());
    return std::nullopt;
  }
  return *std::move(global);
}

void TaskTrainer::Deliver(const CoordinatorLink& link, const WorkItem& w,
                          const TrainedUpdate& update) {
  if (p_.slowdown > 1)
    std::this_thread::sleep_for(std::chrono::duration<double>(
        (p_.slowdown - 1) * update.train_seconds));
  p_.train_seconds->Observe(update.train_seconds);
  const TaskSettings ts = SettingsOf(*w.task);
  p_.books->AddTraining(
      w.round(), update.train_seconds,
      ts.local_steps > 0
          ? static_cast<uint64_t>(ts.local_steps * ts.batch_size)
          : update.num_samples *
                static_cast<uint64_t>(std::max<int64_t>(1, ts.local_epochs)));
  if (p_.secure) {
    p_.secure->Contribute(link, w.round(), w.model().model_id(),
                          w.task->client_id(), update.dense);
    return Finish(w, true, update.train_loss);
  }
  const absl::Status sent = p_.uploader->Upload(link, *w.task, w.model(), update);
  Settle(w, sent);
  if (!sent.ok()) return Fail(link, w, "upload refused: ", sent);
  Finish(w, true, update.train_loss);
}

void TaskTrainer::Fail(const CoordinatorLink& link, const WorkItem& w,
                       absl::string_view what,
                       const absl::Status& st) {
  // The party waits for each of its clients: this one adds nothing.
  if (p_.secure)
    p_.secure->Contribute(link, w.round(), w.model().model_id(),
                          w.task->client_id(), std::nullopt);
  LogLine(p_.name, absl::StrCat("client ", w.task->client_id(), " model ",
                                w.model().model_id(), ": ", what,
                                st.message()));
  Finish(w, false, 0);
}

// The coordinator's answer settles the error-feedback residual the upload
// left: accepted commits it; a refusal puts the earlier one back in force;
// no answer leaves it (TaskUploader::Settles).
void TaskTrainer::Settle(const WorkItem& w, const absl::Status& sent) {
  if (!TaskUploader::Settles(sent)) return;
  const int64_t client = w.task->client_id(), model = w.model().model_id();
  if (auto st = p_.local->Settle(client, model, w.round(), sent.ok()); !st.ok())
    LogLine(p_.name, absl::StrCat("client ", client, " model ", model,
                                  ": residual not kept: ", st.message()));
}

void TaskTrainer::Finish(const WorkItem& w, bool sent, double loss) {
  const std::optional<TaskProgress::Summary> done =
      w.progress->Finish(sent, loss);
  if (!done) return;
  const std::string line = absl::StrFormat(
      "round %d client %d: %d/%d models sent, loss %.4f, %.1f s",
      w.task->round(), w.task->client_id(), done->sent, w.task->models_size(),
      done->mean_loss, done->seconds);
  p_.resident_memory->Set(static_cast<double>(ResidentBytes()));
  LogLine(p_.name, line);
}

}  // namespace shefl
