#include "cli/stop_command.h"

#include <signal.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/command_preamble.h"
#include "cli/proc_identity.h"
#include "cli/run_state.h"
#include "common/core/status_macros.h"

namespace shefl {
namespace {

struct StopArgs {
  std::string dir;
  double timeout_s = 120;
};

absl::StatusOr<StopArgs> Parse(const std::vector<std::string>& args) {
  StopArgs a;
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--timeout-s") {
      SHEFL_ASSIGN_OR_RETURN(const std::string value, NextValue(args, i));
      if (!absl::SimpleAtod(value, &a.timeout_s) || !(a.timeout_s > 0) ||
          a.timeout_s > 86400)
        return absl::InvalidArgumentError(absl::StrCat(
            "--timeout-s '", value, "': expected seconds above 0, at most 86400"));
    } else if (args[i].rfind("-", 0) == 0) {
      return absl::InvalidArgumentError("unknown flag for stop: " + args[i]);
    } else if (!a.dir.empty()) {
      return absl::InvalidArgumentError("stop takes one RUN_DIR, got a second: '" +
                                        args[i] + "'");
    } else {
      a.dir = args[i];
    }
  }
  if (a.dir.empty()) return absl::InvalidArgumentError("RUN_DIR is required");
  return a;
}

// The processes the stop waits for: the launcher (when it was signalled)
// and the coordinator, each while it is still this run's.
bool AnyAlive(const RunInfo& info, bool via_launcher) {
  const Endpoints& e = *info.endpoints;
  return IsRunCoordinator(e.coordinator_pid, info.dir) ||
         (via_launcher && IsRunLauncher(e.launcher_pid, info.dir, e.coordinator_pid));
}

// Waits for the processes to be gone; a progress line every 5 s.
bool WaitGone(const RunInfo& info, bool via_launcher, double timeout_s) {
  const absl::Time start = absl::Now();
  absl::Time next_line = start + absl::Seconds(5);
  while (AnyAlive(info, via_launcher)) {
    const absl::Time now = absl::Now();
    if (now - start > absl::Seconds(timeout_s)) return false;
    if (now >= next_line) {
      std::cerr << "shefl stop: waiting for the coordinator to checkpoint and exit ("
                << absl::ToInt64Seconds(now - start) << " s)\n";
      next_line = now + absl::Seconds(5);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return true;
}

int Stop(const RunInfo& info, double timeout_s) {
  const Endpoints& e = *info.endpoints;
  const bool via_launcher = info.launcher_alive;
  const int target = via_launcher ? e.launcher_pid : e.coordinator_pid;
  if (::kill(target, SIGTERM) != 0) {
    std::cerr << "shefl stop: cannot signal pid " << target << ": "
              << std::strerror(errno) << "\n";
    return 1;
  }
  std::cerr << "shefl stop: sent SIGTERM to "
            << (via_launcher ? "shefl run" : "the coordinator") << " (pid " << target
            << "); waiting up to " << timeout_s << " s for it to exit\n";
  if (!WaitGone(info, via_launcher, timeout_s)) {
    std::cerr << "shefl stop: " << info.dir << " is still running after " << timeout_s
              << " s (a checkpoint may still be being written); check with `shefl "
                 "status "
              << info.dir << "`, or give --timeout-s more\n";
    return 1;
  }
  absl::StatusOr<RunInfo> after = ReadRunInfo(info.dir);
  if (after.ok() && after->state == RunState::kFinished) {
    std::cout << "stopped: " << info.dir << " had finished (" << after->rounds_done
              << " rounds)\n";
    return 0;
  }
  std::cout << "stopped: " << info.dir << " after round "
            << (after.ok() ? after->rounds_done : info.rounds_done) << " of "
            << info.rounds_planned << "\nresume with: shefl run --resume " << info.dir
            << "\n";
  return 0;
}

}  // namespace

std::string StopUsage() {
  return "usage: shefl stop RUN_DIR [--timeout-s S]\n"
         "\n"
         "Stops the run in RUN_DIR cleanly, so that `shefl run --resume RUN_DIR`\n"
         "goes on from it: SIGTERM to the `shefl run` that started it (which\n"
         "stops its coordinator and daemons), or to the coordinator when no\n"
         "`shefl run` did. The coordinator abandons the open round, writes its\n"
         "checkpoint and exits; stop waits for that, printing a line every 5 s.\n"
         "  --timeout-s S  give up waiting after S seconds (default 120; exit 1)\n"
         "Exit status: 0 stopped, 1 not running, not a run folder or still\n"
         "running after S seconds, 2 usage error.\n";
}

namespace {

// The stop of a running run; exit 1 when a.dir is none.
int StopRun(const StopArgs& a) {
  absl::StatusOr<RunInfo> info = ReadRunInfo(a.dir);
  if (!info.ok()) {
    std::cerr << "shefl stop: " << info.status().message() << "\n";
    return 1;
  }
  if (info->state != RunState::kRunning) {
    std::cerr << "shefl stop: " << a.dir << " is not running (it is "
              << RunStateName(info->state) << "); there is nothing to stop\n";
    return 1;
  }
  return Stop(*info, a.timeout_s);
}

}  // namespace

int StopCommand(const std::vector<std::string>& args) {
  return RunCommand(args, "stop", StopUsage(), Parse, StopRun);
}

}  // namespace shefl
