// Server-side deadlines for streams. The synchronous gRPC API gives a
// handler no timeout on Read or Write, so an upload that sends its header
// and then nothing (or a byte a minute), or a download whose reader never
// reads, would hold a server thread for ever: a few hundred such peers
// would use up the thread quota and stop the coordinator. A handler
// registers its stream with an instant; one thread cancels (TryCancel) the
// streams still open after theirs, which makes the handler's Read/Write
// fail at once.
// Thread-safe: every handler thread may Watch.
#ifndef SHEFL_SERVER_RPC_STREAM_WATCHDOG_H_
#define SHEFL_SERVER_RPC_STREAM_WATCHDOG_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <thread>

#include "common/core/mutex.h"

namespace grpc {
class ServerContextBase;
}

namespace shefl {

class StreamWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  StreamWatchdog();
  ~StreamWatchdog();  // stops the thread; cancels nothing more

  // Watches `ctx` until the Guard goes (at the end of the handler).
  class Guard {
   public:
    Guard(StreamWatchdog* w, uint64_t id) : w_(w), id_(id) {}
    Guard(Guard&& o) noexcept : w_(o.w_), id_(o.id_) { o.w_ = nullptr; }
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    ~Guard() {
      if (w_) w_->Forget(id_);
    }

   private:
    StreamWatchdog* w_;
    uint64_t id_;
  };
  Guard Watch(grpc::ServerContextBase* ctx, Clock::time_point until);

  int64_t cancelled() const;  // streams cancelled so far

 private:
  struct Entry {
    grpc::ServerContextBase* ctx;
    Clock::time_point until;
  };
  void Forget(uint64_t id);
  void Loop();

  mutable Mutex mu_;
  std::condition_variable_any cv_;
  std::map<uint64_t, Entry> streams_ ABSL_GUARDED_BY(mu_);
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t cancelled_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RPC_STREAM_WATCHDOG_H_
