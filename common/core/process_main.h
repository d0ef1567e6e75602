// The stop-on-signal wiring of the long-running binaries (shefl-coordinator,
// shefl-client): SIGTERM and SIGINT ask the running service to stop, so it
// saves what it must (the coordinator its checkpoint) and Run() returns.
// Before the service exists (start-up: config, data) there is nothing to
// save: the process leaves at once with 128 + the signal rather than lose
// it.
//
//   return RunMain(argc, argv, "shefl-client", kUsage, flags,
//                  [&] { return RunStoppable(Daemon::Create(o)); },
//                  StopOnSignal);
//
// Thread-safe: the hook is one lock-free atomic pointer, read by the handler
// on whichever thread the signal lands.
#ifndef SHEFL_COMMON_CORE_PROCESS_MAIN_H_
#define SHEFL_COMMON_CORE_PROCESS_MAIN_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shefl {

// The handler RunMain (common/core/flags.h) installs for SIGTERM and
// SIGINT: calls the live StopHook's stop, or _exit(128 + signal) when there
// is none. Async-signal-safe as long as that stop is (it sets a flag).
void StopOnSignal(int signal);

// While it lives, StopOnSignal calls stop(arg). One at a time: a process
// runs one service.
class StopHook {
 public:
  StopHook(void (*stop)(void*), void* arg);
  ~StopHook();
  StopHook(const StopHook&) = delete;
  StopHook& operator=(const StopHook&) = delete;

 private:
  friend void StopOnSignal(int signal);
  void (*const stop_)(void*);
  void* const arg_;
};

// Runs the created service's Run() with SIGTERM and SIGINT routed to its
// RequestStop() (which must be signal-safe); a failed Create comes back as
// its status. The hook is gone before the service is destroyed.
template <typename Service>
absl::Status RunStoppable(absl::StatusOr<std::unique_ptr<Service>> created) {
  if (!created.ok()) return created.status();
  Service& service = **created;
  const StopHook hook([](void* s) { static_cast<Service*>(s)->RequestStop(); },
                      &service);
  return service.Run();
}

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_PROCESS_MAIN_H_
