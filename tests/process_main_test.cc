// The binaries' stop-on-signal wiring (common/core/process_main.h): a
// signal while the service runs asks it to stop; before or after, the
// process leaves with 128 + the signal.
#include "common/core/process_main.h"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <memory>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// A service whose Run() receives SIGTERM, as the coordinator does when
// `shefl stop` or systemd stops it.
class Service {
 public:
  absl::Status Run() {
    std::raise(SIGTERM);
    return stopped_ ? absl::CancelledError("stopped") : absl::OkStatus();
  }
  void RequestStop() { stopped_ = true; }

 private:
  volatile bool stopped_ = false;
};

// The exit status of a child that installs StopOnSignal and raises SIGTERM
// with no service running.
int ExitWithoutService() {
  const pid_t pid = fork();
  if (pid == 0) {
    std::signal(SIGTERM, StopOnSignal);
    std::raise(SIGTERM);
    _exit(0);  // not reached: the handler exits
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST_CASE("a signal while the service runs asks it to stop") {
  auto* previous = std::signal(SIGTERM, StopOnSignal);
  const absl::Status st = RunStoppable(
      absl::StatusOr<std::unique_ptr<Service>>(std::make_unique<Service>()));
  std::signal(SIGTERM, previous);
  CHECK(st == absl::CancelledError("stopped"));
}

TEST_CASE("without a running service a signal exits with 128 + signal") {
  CHECK(ExitWithoutService() == 128 + SIGTERM);
  {
    Service s;
    const StopHook hook(
        [](void* p) { static_cast<Service*>(p)->RequestStop(); }, &s);
  }
  // The hook is gone with its scope.
  CHECK(ExitWithoutService() == 128 + SIGTERM);
}

TEST_CASE("a failed Create comes back as its status") {
  const absl::Status st = RunStoppable(absl::StatusOr<std::unique_ptr<Service>>(
      absl::InvalidArgumentError("bad --device")));
  CHECK(st == absl::InvalidArgumentError("bad --device"));
}

}  // namespace
}  // namespace shefl
