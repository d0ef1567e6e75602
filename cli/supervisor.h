// The launcher's children as one group: started by name, watched together,
// and torn down together, so that no path out of `shefl run` (success,
// a failed child, Ctrl-C) leaves a process behind.
// Not thread-safe: the launcher's main thread drives it (a signal handler
// only sets its stop flag).
#ifndef SHEFL_CLI_SUPERVISOR_H_
#define SHEFL_CLI_SUPERVISOR_H_

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cli/process.h"

namespace shefl {

struct ChildExit {
  std::string name;
  ExitStatus status;
};

class Supervisor {
 public:
  Supervisor() = default;
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;
  // Terminates whatever still runs (SIGTERM, then SIGKILL after 5 s).
  ~Supervisor();

  // Spawns `argv` with output to `log_path` under `name`.
  absl::StatusOr<pid_t> Start(const std::string& name,
                              const std::vector<std::string>& argv,
                              const std::string& log_path);

  // Reaps, without blocking, every child that has exited since last time.
  std::vector<ChildExit> Reap();

  bool IsRunning(const std::string& name) const;
  int NumRunning() const;
  std::string LogPath(const std::string& name) const;

  // Sends `sig` to every child still running.
  void SignalAll(int sig);

  // SIGTERM to every running child, up to `grace` for them to exit, then
  // SIGKILL; returns once all are reaped. Returns the names that needed
  // SIGKILL.
  std::vector<std::string> TerminateAll(absl::Duration grace);

 private:
  struct Child {
    std::string name;
    pid_t pid;
    std::string log_path;
    bool running;
  };
  std::vector<Child> children_;
};

// "<name> failed (exit code 3); last log lines:" followed by the last
// `lines` lines of its log, each indented.
std::string FailureReport(const std::string& name, const ExitStatus& status,
                          const std::string& log_path, int lines = 20);

struct WatchOptions {
  std::string primary;  // the child whose clean exit ends the run
  absl::Duration poll = absl::Milliseconds(200);
  // After the primary exits 0: how long the others may take to exit by
  // themselves, then the SIGTERM-to-SIGKILL grace.
  absl::Duration drain = absl::Seconds(30);
  absl::Duration kill_grace = absl::Seconds(5);
  // On an interrupt: SIGTERM-to-SIGKILL grace.
  absl::Duration interrupt_grace = absl::Seconds(10);
  std::function<void()> on_tick;        // called every poll (progress)
  // A child that failed: true when it is taken care of (e.g. restarted)
  // and the run goes on; null or false ends the run.
  std::function<bool(const ChildExit&)> on_failure;
  const volatile sig_atomic_t* stop = nullptr;  // set by a signal handler
};

enum class WatchOutcome { kCompleted, kChildFailed, kInterrupted };

struct WatchResult {
  WatchOutcome outcome = WatchOutcome::kCompleted;
  // kChildFailed: FailureReport of the first child that failed. Otherwise
  // warnings (e.g. a daemon that had to be killed after the run), or empty.
  std::string report;
  // kChildFailed: one line, "daemon-0 failed (exit code 3): <its last log
  // line>", for RUN_DIR/failure.txt.
  std::string failure;
};

// Watches the group until the primary exits 0 and the others are gone, a
// child fails (exit code != 0 or a signal: every other child is terminated),
// or *stop is set (every child is terminated). Nothing runs on return.
WatchResult Watch(Supervisor& group, const WatchOptions& options);

}  // namespace shefl

#endif  // SHEFL_CLI_SUPERVISOR_H_
