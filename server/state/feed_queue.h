// One daemon's TaskFeed: the messages waiting for its stream, and the
// stream that writes them (a FeedSink: the TaskFeed reactor,
// server/rpc/task_feed.cc). A message is handed to the sink the
// moment it is pushed when the sink is not already writing one, and the
// next one when that write completes: nothing polls, and no thread waits
// on an idle feed. The queue decides, under its one mutex, when a sink's
// stream ends (closed and drained, cancelled, or taken over by a newer
// feed of the same daemon), so each sink is ended exactly once.
// Thread-safe: every method takes the queue's mutex. A sink's
// StartWriting runs with it held (gRPC never completes a write inline);
// its End runs without it.
#ifndef SHEFL_SERVER_STATE_FEED_QUEUE_H_
#define SHEFL_SERVER_STATE_FEED_QUEUE_H_

#include <deque>

#include "common/core/mutex.h"
#include "shefl.pb.h"

namespace shefl {

class FeedQueue;

// What writes a feed's messages to the wire, one write at a time.
class FeedSink {
 public:
  virtual ~FeedSink() = default;

 protected:
  friend class FeedQueue;
  // Starts writing `m` (copy it: the queue's copy is gone on return).
  // Called with the queue's mutex held; must not call into the queue.
  virtual void StartWriting(const v1::FeedMessage& m) = 0;
  // Ends the stream (gRPC's Finish). Called once, without the mutex.
  virtual void End() = 0;

 private:
  // Guarded by the mutex of the queue it is attached to.
  bool busy_ = false;      // a write in flight
  bool ended_ = false;     // End() called or about to be
  bool replaced_ = false;  // a newer sink took its queue
};

class FeedQueue {
 public:
  // Dropped when the queue is closed.
  void Push(v1::FeedMessage m);
  // No more messages: an attached sink ends once what waits is written.
  void Close();
  bool closed() const;

  // `sink` writes this queue's messages from now on; what waits is handed
  // to it at once. A sink attached before is ended (a daemon's new feed
  // replaces one whose connection it has given up on).
  void Attach(FeedSink* sink);
  // After `sink`'s write completed: hands it the next message, or lets it
  // idle, or ends it (`more` false: the write failed or was the last one;
  // the queue closed and drained; another sink took over).
  void WriteDone(FeedSink* sink, bool more);
  // The call was cancelled: ends `sink` now, or when its write completes.
  void Cancel(FeedSink* sink);
  // `sink`'s stream is over; false when a newer feed had replaced it.
  bool Detach(FeedSink* sink);

 private:
  // The sink to End() after unlocking, or null.
  FeedSink* EndLocked(FeedSink* sink) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void NextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::deque<v1::FeedMessage> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  FeedSink* sink_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_FEED_QUEUE_H_
