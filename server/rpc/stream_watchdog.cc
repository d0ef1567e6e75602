#include "server/rpc/stream_watchdog.h"

#include <grpcpp/server_context.h>

#include "common/core/mutex.h"

namespace shefl {

StreamWatchdog::StreamWatchdog() : thread_([this] { Loop(); }) {}

StreamWatchdog::~StreamWatchdog() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

StreamWatchdog::Guard StreamWatchdog::Watch(grpc::ServerContextBase* ctx,
                                            Clock::time_point until) {
  MutexLock lock(mu_);
  const uint64_t id = next_id_++;
  streams_[id] = {ctx, until};
  return Guard(this, id);
}

void StreamWatchdog::Forget(uint64_t id) {
  MutexLock lock(mu_);
  streams_.erase(id);
}

int64_t StreamWatchdog::cancelled() const {
  MutexLock lock(mu_);
  return cancelled_;
}

// Checks every 100 ms: a deadline is a bound on a stream's life, not a
// precise timer. The lock is held across TryCancel so that a handler
// cannot end (and its context go) while it is being cancelled.
void StreamWatchdog::Loop() {
  UniqueLock lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(100));
    const auto now = Clock::now();
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (it->second.until > now) {
        ++it;
        continue;
      }
      it->second.ctx->TryCancel();
      ++cancelled_;
      it = streams_.erase(it);
    }
  }
}

}  // namespace shefl
