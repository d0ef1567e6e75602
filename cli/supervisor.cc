#include "cli/supervisor.h"

#include <signal.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shefl {

Supervisor::~Supervisor() { TerminateAll(absl::Seconds(5)); }

absl::StatusOr<pid_t> Supervisor::Start(const std::string& name,
                                        const std::vector<std::string>& argv,
                                        const std::string& log_path) {
  absl::StatusOr<pid_t> pid = SpawnWithLog(argv, log_path);
  if (!pid.ok()) {
    return absl::Status(pid.status().code(),
                        absl::StrCat(name, ": ", pid.status().message()));
  }
  children_.push_back({name, *pid, log_path, true});
  return *pid;
}

std::vector<ChildExit> Supervisor::Reap() {
  std::vector<ChildExit> exits;
  for (Child& c : children_) {
    if (!c.running) continue;
    if (std::optional<ExitStatus> s = TryReap(c.pid)) {
      c.running = false;
      exits.push_back({c.name, *s});
    }
  }
  return exits;
}

bool Supervisor::IsRunning(const std::string& name) const {
  for (const Child& c : children_) {
    if (c.name == name) return c.running;
  }
  return false;
}

int Supervisor::NumRunning() const {
  return static_cast<int>(std::count_if(
      children_.begin(), children_.end(),
      [](const Child& c) { return c.running; }));
}

std::string Supervisor::LogPath(const std::string& name) const {
  for (const Child& c : children_) {
    if (c.name == name) return c.log_path;
  }
  return "";
}

void Supervisor::SignalAll(int sig) {
  for (const Child& c : children_) {
    if (c.running) kill(c.pid, sig);
  }
}

std::vector<std::string> Supervisor::TerminateAll(absl::Duration grace) {
  Reap();
  SignalAll(SIGTERM);
  absl::Time deadline = absl::Now() + grace;
  while (NumRunning() > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
    Reap();
  }
  std::vector<std::string> killed;
  for (const Child& c : children_) {
    if (c.running) killed.push_back(c.name);
  }
  SignalAll(SIGKILL);
  while (NumRunning() > 0) {
    absl::SleepFor(absl::Milliseconds(5));
    Reap();
  }
  return killed;
}

std::string FailureReport(const std::string& name, const ExitStatus& status,
                          const std::string& log_path, int lines) {
  std::string out = absl::StrCat(name, " failed (", status.Describe(),
                                 "); last log lines:\n");
  std::vector<std::string> tail = LastLines(log_path, lines);
  if (tail.empty()) absl::StrAppend(&out, "  (log ", log_path, " is empty)\n");
  for (const std::string& line : tail) absl::StrAppend(&out, "  ", line, "\n");
  return out;
}

namespace {

bool Stopped(const WatchOptions& o) { return o.stop != nullptr && *o.stop; }

void Tick(const WatchOptions& o) {
  if (o.on_tick) o.on_tick();
}

// After the primary finished: the others get `drain` to exit on their own.
// Failures here no longer spoil the run's results, so they become warnings.
WatchResult Drain(Supervisor& group, const WatchOptions& o) {
  WatchResult result;
  absl::Time deadline = absl::Now() + o.drain;
  while (group.NumRunning() > 0 && absl::Now() < deadline && !Stopped(o)) {
    absl::SleepFor(std::min(o.poll, absl::Milliseconds(50)));
    for (const ChildExit& e : group.Reap()) {
      if (!e.status.ok()) {
        absl::StrAppend(&result.report, "warning: ",
                        FailureReport(e.name, e.status, group.LogPath(e.name)));
      }
    }
  }
  Tick(o);
  if (Stopped(o)) {
    group.TerminateAll(o.interrupt_grace);
    result.outcome = WatchOutcome::kInterrupted;
    return result;
  }
  if (group.NumRunning() > 0) {
    absl::StrAppend(&result.report, "warning: ", group.NumRunning(),
                    " process(es) still running ", absl::FormatDuration(o.drain),
                    " after the coordinator finished; sending SIGTERM\n");
    for (const std::string& name : group.TerminateAll(o.kill_grace)) {
      absl::StrAppend(&result.report, "warning: ", name,
                      " ignored SIGTERM; killed\n");
    }
  }
  return result;
}

}  // namespace

WatchResult Watch(Supervisor& group, const WatchOptions& o) {
  absl::Time next_tick = absl::InfinitePast();
  while (true) {
    if (Stopped(o)) {
      group.TerminateAll(o.interrupt_grace);
      Tick(o);
      return {WatchOutcome::kInterrupted, ""};
    }
    bool primary_done = false;
    for (const ChildExit& e : group.Reap()) {
      if (!e.status.ok() && o.on_failure && o.on_failure(e)) continue;
      if (!e.status.ok()) {
        // Terminate first, so the report is printed with nothing running.
        group.TerminateAll(o.kill_grace);
        Tick(o);
        const std::vector<std::string> last = LastLines(group.LogPath(e.name), 1);
        return {WatchOutcome::kChildFailed,
                FailureReport(e.name, e.status, group.LogPath(e.name)),
                absl::StrCat(e.name, " failed (", e.status.Describe(), ")",
                             last.empty() ? "" : ": " + last.front())};
      }
      if (e.name == o.primary) primary_done = true;
    }
    if (primary_done) return Drain(group, o);
    if (absl::Now() >= next_tick) {
      Tick(o);
      next_tick = absl::Now() + o.poll;
    }
    // Short sleeps keep reaction to failures and Ctrl-C quick; the progress
    // tick keeps its own, slower pace.
    absl::SleepFor(std::min(o.poll, absl::Milliseconds(50)));
  }
}

}  // namespace shefl
