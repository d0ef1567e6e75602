#include "cli/restarter.h"

#include <algorithm>
#include <iostream>

#include "absl/strings/str_format.h"
#include "common/core/flags.h"

namespace shefl {

DaemonRestarter::DaemonRestarter(Supervisor& group, const RunPlan& plan,
                                 int max_restarts, OnStart on_start)
    : group_(group),
      plan_(plan),
      max_restarts_(max_restarts),
      on_start_(std::move(on_start)) {}

const ChildCommand* DaemonRestarter::Find(const std::string& name) const {
  for (const ChildCommand& d : plan_.daemons)
    if (d.name == name) return &d;
  return nullptr;
}

bool DaemonRestarter::OnFailure(const ChildExit& exit) {
  if (Find(exit.name) == nullptr) return false;  // the coordinator
  State& s = state_[exit.name];
  if (!exit.status.signaled && exit.status.code == kExitCannotStart) {
    // Its options, device or TLS files are wrong: every restart would print
    // the same error. The run ends now, with that error once.
    std::cerr << "shefl: " << exit.name << " cannot start (" << exit.status.Describe()
              << "): a restart would fail the same way; ending the run\n";
    return false;
  }
  if (s.restarts >= max_restarts_) {
    // A daemon left for good costs its clients: the coordinator goes on
    // without them while its quorum holds. Only when every daemon is gone
    // (a daemon that cannot start at all) does the run end here.
    gone_.insert(exit.name);
    const bool last = gone_.size() == plan_.daemons.size();
    std::cerr << "shefl: " << exit.name << " " << exit.status.Describe()
              << " after " << s.restarts << " restarts; giving up on it: "
              << (last ? "no daemon is left, ending the run\n"
                       : "the run goes on without it (the coordinator leaves "
                         "its clients out after clients.lost_after_s)\n");
    return !last;
  }
  ++s.restarts;
  const double delay = std::min(30.0, static_cast<double>(1 << (s.restarts - 1)));
  s.due = absl::Now() + absl::Seconds(delay);
  std::cerr << absl::StrFormat(
      "shefl: %s %s; restarting in %.0f s (restart %d of at most %d)\n",
      exit.name, exit.status.Describe(), delay, s.restarts, max_restarts_);
  return true;
}

void DaemonRestarter::Tick() {
  const absl::Time now = absl::Now();
  for (auto& [name, s] : state_) {
    if (s.due > now) continue;
    s.due = absl::InfiniteFuture();
    const ChildCommand* d = Find(name);
    absl::StatusOr<pid_t> pid = group_.Start(d->name, d->argv, d->log_path);
    if (!pid.ok()) {
      std::cerr << "shefl: restarting " << name << ": " << pid.status().message()
                << "\n";
      continue;  // its absence costs rounds; the coordinator goes on
    }
    ++total_;
    if (on_start_) on_start_(name, *pid);
  }
}

}  // namespace shefl
