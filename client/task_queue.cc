#include "client/task_queue.h"

#include <iterator>
#include <thread>
#include <utility>

namespace shefl {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::optional<TaskProgress::Summary> TaskProgress::Finish(bool sent,
                                                          double loss) {
  MutexLock lock(mu_);
  sent_ += sent ? 1 : 0;
  loss_ += sent ? loss : 0;
  if (--remaining_ > 0) return std::nullopt;
  Summary s;
  s.sent = sent_;
  s.mean_loss = sent_ ? loss_ / sent_ : 0.0;
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start_)
                  .count();
  return s;
}

void TaskQueue::Open(int64_t closed_round) {
  MutexLock lock(mu_);
  closed_round_ = closed_round;
  closed_ = false;
}

void TaskQueue::Close() {
  {
    MutexLock lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void TaskQueue::NoteTaskArrival() { last_task_ns_ = SteadyNs(); }

void TaskQueue::PushTask(v1::Task task, double expected_work) {
  if (task.models_size() == 0) return;
  auto shared = std::make_shared<const v1::Task>(std::move(task));
  auto progress = std::make_shared<TaskProgress>(shared->models_size());
  {
    MutexLock lock(mu_);
    for (int i = 0; i < shared->models_size(); ++i) {
      Entry e;
      e.item = WorkItem{shared, i, expected_work, progress};
      e.round = e.item->round();
      // Behind the last round end and every longer item.
      auto at = queue_.end();
      while (at != queue_.begin()) {
        auto prev = std::prev(at);
        if (!prev->item || prev->item->expected_work >= expected_work) break;
        at = prev;
      }
      queue_.insert(at, std::move(e));
    }
  }
  cv_.notify_all();
}

void TaskQueue::PushRoundEnd(int64_t round) {
  {
    MutexLock lock(mu_);
    closed_round_ = round;
    queue_.push_back(Entry{std::nullopt, round});
  }
  cv_.notify_all();
}

std::optional<WorkItem> TaskQueue::Take() {
  UniqueLock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !queue_.empty() || closed_;
    });
    if (queue_.empty()) return std::nullopt;
    Entry e = std::move(queue_.front());
    queue_.pop_front();
    if (!e.item) {
      ended_rounds_.push_back(e.round);
      FlushRoundEndsLocked();
      continue;
    }
    if (closed_) continue;  // the session is gone
    if (in_flight_.empty() && listener_.on_busy) listener_.on_busy(true);
    ++in_flight_[e.round];
    return std::move(e.item);
  }
}

std::vector<WorkItem> TaskQueue::TakeRound() {
  std::optional<WorkItem> first = Take();
  if (!first) return {};
  AwaitTaskBurst();
  std::vector<WorkItem> out;
  out.push_back(*std::move(first));
  const int64_t round = out[0].round();
  MutexLock lock(mu_);
  // A round's items sit together, ahead of its end (PushTask).
  while (!closed_ && !queue_.empty() && queue_.front().item &&
         queue_.front().round == round) {
    out.push_back(*std::move(queue_.front().item));
    queue_.pop_front();
    ++in_flight_[round];
  }
  return out;
}

void TaskQueue::Done(const WorkItem& item) {
  MutexLock lock(mu_);
  const int64_t round = item.round();
  if (--in_flight_[round] == 0) in_flight_.erase(round);
  if (in_flight_.empty() && listener_.on_busy) listener_.on_busy(false);
  FlushRoundEndsLocked();
}

void TaskQueue::FlushRoundEnds() {
  MutexLock lock(mu_);
  FlushRoundEndsLocked();
}

int TaskQueue::InFlightUpToLocked(int64_t round) const {
  int n = 0;
  for (auto it = in_flight_.begin();
       it != in_flight_.end() && it->first <= round; ++it)
    n += it->second;
  return n;
}

void TaskQueue::FlushRoundEndsLocked() {
  while (!ended_rounds_.empty() &&
         InFlightUpToLocked(ended_rounds_.front()) == 0) {
    if (listener_.on_round_done) listener_.on_round_done(ended_rounds_.front());
    ended_rounds_.pop_front();
  }
}

bool TaskQueue::RoundClosed(int64_t round) const {
  MutexLock lock(mu_);
  return round <= closed_round_;
}

void TaskQueue::AwaitTaskBurst() const {
  constexpr int64_t kQuietNs = 30'000'000, kMaxNs = 1'000'000'000;
  const int64_t start = SteadyNs();
  while (SteadyNs() - last_task_ns_ < kQuietNs && SteadyNs() - start < kMaxNs)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

// No predicate: any change to the queue wakes the caller early, as a
// check of the time should.
bool TaskQueue::WaitClosed(std::chrono::milliseconds d) {
  UniqueLock lock(mu_);
  if (!closed_) cv_.wait_for(lock, d);
  return closed_;
}

size_t TaskQueue::queued() const {
  MutexLock lock(mu_);
  return queue_.size();
}

}  // namespace shefl
