#include "server/state/feed_queue.h"

#include <utility>

namespace shefl {

FeedSink* FeedQueue::EndLocked(FeedSink* sink) {
  if (sink == nullptr || sink->ended_) return nullptr;
  sink->ended_ = true;
  if (sink == sink_) sink_ = nullptr;
  return sink;
}

// Hands the attached sink, when idle, the next waiting message.
void FeedQueue::NextLocked() {
  if (sink_ == nullptr || sink_->busy_ || queue_.empty()) return;
  sink_->busy_ = true;
  v1::FeedMessage m = std::move(queue_.front());
  queue_.pop_front();
  sink_->StartWriting(m);
}

void FeedQueue::Push(v1::FeedMessage m) {
  MutexLock lock(mu_);
  if (closed_) return;
  queue_.push_back(std::move(m));
  NextLocked();
}

void FeedQueue::Close() {
  FeedSink* end = nullptr;
  {
    MutexLock lock(mu_);
    closed_ = true;
    if (sink_ != nullptr && !sink_->busy_ && queue_.empty())
      end = EndLocked(sink_);
  }
  if (end) end->End();
}

bool FeedQueue::closed() const {
  MutexLock lock(mu_);
  return closed_;
}

void FeedQueue::Attach(FeedSink* sink) {
  FeedSink* end_old = nullptr;
  FeedSink* end_new = nullptr;
  {
    MutexLock lock(mu_);
    FeedSink* old = sink_;
    sink_ = sink;
    if (old != nullptr) {
      old->replaced_ = true;
      // With a write in flight it ends when that write completes.
      if (!old->busy_) end_old = EndLocked(old);
    }
    if (closed_ && queue_.empty()) end_new = EndLocked(sink);
    else NextLocked();
  }
  if (end_old) end_old->End();
  if (end_new) end_new->End();
}

void FeedQueue::WriteDone(FeedSink* sink, bool more) {
  FeedSink* end = nullptr;
  {
    MutexLock lock(mu_);
    sink->busy_ = false;
    if (sink != sink_ || !more || (closed_ && queue_.empty()))
      end = EndLocked(sink);
    else
      NextLocked();
  }
  if (end) end->End();
}

void FeedQueue::Cancel(FeedSink* sink) {
  FeedSink* end = nullptr;
  {
    MutexLock lock(mu_);
    // A write in flight completes (failed, the call being cancelled) and
    // WriteDone ends the sink then: gRPC wants no write pending at Finish.
    if (sink->busy_) return;
    end = EndLocked(sink);
  }
  if (end) end->End();
}

bool FeedQueue::Detach(FeedSink* sink) {
  MutexLock lock(mu_);
  if (sink == sink_) sink_ = nullptr;
  return !sink->replaced_;
}

}  // namespace shefl
