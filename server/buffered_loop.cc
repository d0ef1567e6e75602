#include "server/buffered_loop.h"

#include <algorithm>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/durable_file.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/fed/lr_schedule.h"
#include "common/sparse/codec.h"

namespace shefl {

BufferedLoop::BufferedLoop(Coordinator* coordinator)
    : c_(*coordinator),
      cfg_(coordinator->state_->config),
      concurrency_(BufferConcurrency(cfg_)) {
  shape_.num_models = cfg_.model.num_models;
  shape_.num_hpc = cfg_.clients.per_round_hpc;
  shape_.num_lpc = cfg_.clients.per_round_lpc;
  for (int64_t m = 0; m < cfg_.model.num_models; ++m)
    buffers_.emplace_back(cfg_, shape_, c_.state_->store->dim());
}

int64_t BufferedLoop::total_applications() const {
  return cfg_.rounds * cfg_.model.num_models;
}

absl::Status BufferedLoop::Run() {
  const std::string dir = c_.results_->dir();
  ModelStore& store = *c_.state_->store;
  // What a replay starts from (server/buffered_replay.h).
  {
    auto [models, versions] = store.Snapshot();
    SHEFL_RETURN_IF_ERROR(ModelStore::SaveCheckpoint(
        dir + "/initial_models.ckpt", 0, models, versions));
  }
  log_.open(dir + "/buffer_log.jsonl", std::ios::trunc);
  if (!log_)
    return absl::InternalError(absl::StrCat("cannot write ", dir,
                                            "/buffer_log.jsonl"));
  if (cfg_.buffered.record_uploads)
    std::filesystem::create_directories(dir + "/uploads");
  KeepVersions();
  LogLine("coordinator",
          absl::StrFormat("buffered: %d tasks in flight, buffers of %d "
                          "updates, %d applications (%d per model)",
                          concurrency_, BufferSize(cfg_), total_applications(),
                          cfg_.rounds));
  while (applications_ < total_applications() && !c_.state_->stop) {
    FillSlots();
    SHEFL_RETURN_IF_ERROR(CollectEnded());
    if (applications_ < total_applications() && Stalled()) {
      int64_t fullest = 0;
      for (size_t m = 0; m < buffers_.size(); ++m)
        if (buffers_[m].fill() > buffers_[fullest].fill())
          fullest = static_cast<int64_t>(m);
      SHEFL_RETURN_IF_ERROR(Apply(fullest, /*early=*/true));
    }
    Release();
    c_.state_->metrics.SetTasksInFlight(static_cast<double>(tickets_.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  // What is still out is over: its updates would come too late.
  for (auto& [number, t] : tickets_)
    if (!t.ended) {
      t.books->Close();
      c_.state_->CloseTicket(number);
      t.ended = true;
    }
  for (auto& [number, t] : tickets_) t.waiting = 0;
  Release();
  if (c_.state_->stop)
    LogLine("coordinator",
            absl::StrCat("stopped after ", applications_,
                         " applications; a buffered run does not resume"));
  c_.buffered_rounds_done_ = applications_ / cfg_.model.num_models;
  // Downloads are booked under the ticket that asked (a shared one once).
  DownloadBook::Bytes downloads;
  for (int64_t t = 1; t < next_ticket_; ++t)
    downloads += c_.state_->downloads.Round(t);
  c_.buffered_summary_ = {{"applications", applications_},
                          {"tickets", next_ticket_ - 1},
                          {"cohorts_drawn", draws_},
                          {"updates_stale", stale_},
                          {"updates_lost", lost_},
                          {"updates_rejected", rejected_},
                          {"early_applications", early_},
                          {"concurrency", concurrency_},
                          {"size", BufferSize(cfg_)},
                          {"download_bytes_logical", downloads.logical()},
                          {"download_bytes_physical", downloads.physical()}};
  return absl::OkStatus();
}

// Cohorts are drawn as a synchronous run draws them, among the connected
// clients without a task; with none busy and all connected there is no
// filter, so the draws are a synchronous run's.
void BufferedLoop::FillSlots() {
  CoordinatorState& s = *c_.state_;
  while (static_cast<int64_t>(tickets_.size()) < concurrency_ && !s.stop) {
    if (queued_.empty()) {
      Availability free;
      if (!busy_.empty() || !s.registry.AllConnected())
        free = [this, &s](int64_t id) {
          return s.registry.IsConnected(id) && !busy_.count(id);
        };
      RoundPlan plan = c_.kind_->Plan(draws_, free);
      if (plan.tasks.empty()) return;
      for (const ClientTask& t : plan.tasks) queued_.emplace_back(t, draws_);
      ++draws_;
    }
    auto [task, draw] = queued_.front();
    queued_.pop_front();
    if (busy_.count(task.client_id) || !s.registry.IsConnected(task.client_id))
      continue;
    Dispatch(task, draw);
  }
}

void BufferedLoop::Dispatch(const ClientTask& task, int64_t draw) {
  CoordinatorState& s = *c_.state_;
  const int64_t number = next_ticket_++;
  RoundPlan one;
  one.round = number;
  one.tasks = {task};
  (task.tier == Tier::kHpc ? one.num_hpc : one.num_lpc) = 1;
  Ticket t;
  t.task = task;
  for (int64_t m = 0; m < cfg_.model.num_models; ++m)
    t.versions.push_back(s.store->Version(m));
  // The ticket keeps its client's updates whole for the buffers, whatever
  // the run's reduction.
  AggregationConfig keep = cfg_.aggregation;
  keep.reduction = "client_order";
  const auto deadline =
      Clock::now() + std::chrono::milliseconds(
                         static_cast<int64_t>(cfg_.round_deadline_s * 1000));
  t.books = std::make_shared<RoundState>(number, one, t.versions,
                                         s.store->dim(), keep,
                                         cfg_.model.num_models, deadline);
  std::map<int64_t, v1::FeedMessage> msgs = c_.MakeTasks(one, number);
  v1::FeedMessage& msg = msgs.begin()->second;
  // The learning rate of the cohort's draw, as the synchronous round of
  // that number has it.
  msg.mutable_task()->mutable_train()->set_lr(
      RoundLearningRate(cfg_.train, draw));
  msg.mutable_task()->set_seed_round(static_cast<uint64_t>(draw + 1));
  s.OpenTicket(t.books, msg);
  busy_.insert(task.client_id);
  tickets_.emplace(number, std::move(t));
  c_.PushTasks(msgs);
}

absl::Status BufferedLoop::CollectEnded() {
  const auto now = Clock::now();
  for (auto& [number, t] : tickets_) {
    if (t.ended) continue;
    if (!t.books->Complete() && now < t.books->deadline()) continue;
    SHEFL_RETURN_IF_ERROR(Take(number, t));
  }
  return absl::OkStatus();
}

// The ticket's updates go into their models' buffers in model order; a
// buffer that fills is applied before the next update enters.
absl::Status BufferedLoop::Take(int64_t number, Ticket& t) {
  CoordinatorState& s = *c_.state_;
  t.ended = true;
  std::vector<ModelAggregator>& aggs = t.books->Close();
  s.CloseTicket(number);
  int64_t arrived = 0;
  for (size_t m = 0; m < aggs.size(); ++m) {
    for (ReceivedUpdate& u : *aggs[m].mutable_updates()) {
      ++arrived;
      const int64_t model = static_cast<int64_t>(m);
      std::string recorded;
      if (cfg_.buffered.record_uploads) {
        SHEFL_ASSIGN_OR_RETURN(recorded,
                               EncodeSparseDelta(u.delta, ValueType::kFp32));
      }
      absl::Status st = buffers_[m].Add(number, std::move(u),
                                        t.versions[m], s.store->Version(model));
      if (!st.ok()) {
        // Stale since its header was read; anything else the ticket's
        // checks would have refused already.
        const bool stale = absl::IsFailedPrecondition(st);
        (stale ? stale_ : rejected_) += 1;
        s.metrics.CountUpdate(stale ? "late" : "rejected");
        LogLine("coordinator", absl::StrCat("ticket ", number, " client ",
                                            t.task.client_id, " model ", m,
                                            ": refused, ", st.message()));
        continue;
      }
      ++t.waiting;
      if (!recorded.empty())
        SHEFL_RETURN_IF_ERROR(WriteFileDurably(
            absl::StrCat(c_.results_->dir(), "/uploads/", number, "-", m,
                         ".delta"),
            recorded));
      s.metrics.SetBufferFill(model, static_cast<double>(buffers_[m].fill()));
      if (buffers_[m].Full()) SHEFL_RETURN_IF_ERROR(Apply(model, false));
    }
  }
  // Refused at their header as stale (CoordinatorService::CheckFresh).
  const auto refused = t.books->refusals();
  const auto at_header = refused.count("stale") ? refused.at("stale") : 0;
  stale_ += at_header;
  lost_ += static_cast<int64_t>(t.task.models.size()) - arrived - at_header;
  return absl::OkStatus();
}

bool BufferedLoop::Stalled() const {
  for (const auto& [number, t] : tickets_)
    if (!t.ended) return false;
  for (const UpdateBuffer& b : buffers_)
    if (b.fill() > 0) return true;
  return false;
}

void BufferedLoop::Release() {
  CoordinatorState& s = *c_.state_;
  for (auto it = tickets_.begin(); it != tickets_.end();) {
    if (it->second.ended && it->second.waiting == 0) {
      busy_.erase(it->second.task.client_id);
      it = tickets_.erase(it);
    } else {
      ++it;
    }
  }
  // A daemon skips what is queued of a round it was told is over, so the
  // end it hears is the last ticket before the first still running.
  int64_t over = next_ticket_ - 1;
  for (const auto& [number, t] : tickets_)
    if (!t.ended) {
      over = number - 1;
      break;
    }
  if (over > released_below_) {
    released_below_ = over;
    v1::FeedMessage end;
    end.mutable_round_end()->set_round(over);
    for (const auto& session : s.registry.Sessions()) session->feed.Push(end);
  }
  KeepVersions();
}

void BufferedLoop::KeepVersions() {
  ModelStore& store = *c_.state_->store;
  for (int64_t m = 0; m < cfg_.model.num_models; ++m) {
    uint64_t oldest = store.Version(m);
    for (const auto& [number, t] : tickets_)
      if (!t.ended) oldest = std::min(oldest, t.versions[m]);
    store.KeepFrom(m, oldest);
  }
}

}  // namespace shefl
