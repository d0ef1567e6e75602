// Restarts a daemon that dies during `shefl run` (docs/DESIGN.md, "Trust
// and faults": a
// client that vanishes costs its round's update, nothing else): after a
// backoff of 1 s doubling to 30 s, at most `max_restarts` times per daemon.
// After that the run goes on without it (the coordinator leaves its clients
// out, and stops below its quorum), unless no daemon is left: daemons that
// cannot start at all still end the run with their logs. A daemon that
// exits kExitCannotStart (common/core/flags.h) ends the run at once.
// Not thread-safe: the launcher's supervising loop drives it.
#ifndef SHEFL_CLI_RESTARTER_H_
#define SHEFL_CLI_RESTARTER_H_

#include <sys/types.h>

#include <functional>
#include <map>
#include <set>
#include <string>

#include "absl/time/time.h"
#include "cli/run_plan.h"
#include "cli/supervisor.h"

namespace shefl {

class DaemonRestarter {
 public:
  using OnStart = std::function<void(const std::string& name, pid_t pid)>;
  DaemonRestarter(Supervisor& group, const RunPlan& plan, int max_restarts,
                  OnStart on_start);

  // A child exited with a failure: true when it is a daemon that will be
  // restarted (the run goes on), false when the run must end.
  bool OnFailure(const ChildExit& exit);
  // Starts the daemons whose backoff is over; call it every tick.
  void Tick();
  int total_restarts() const { return total_; }

 private:
  struct State {
    int restarts = 0;
    absl::Time due = absl::InfiniteFuture();  // pending restart
  };
  const ChildCommand* Find(const std::string& name) const;

  Supervisor& group_;
  const RunPlan& plan_;
  const int max_restarts_;
  OnStart on_start_;
  std::map<std::string, State> state_;
  std::set<std::string> gone_;  // restarts used up
  int total_ = 0;
};

}  // namespace shefl

#endif  // SHEFL_CLI_RESTARTER_H_
