// Child processes of the launcher: spawn with output redirected to a log
// file, non-blocking reaping, signalling, and reading a log's tail for
// error reports.
#ifndef SHEFL_CLI_PROCESS_H_
#define SHEFL_CLI_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// How a child ended, decoded from waitpid's status.
struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code when !signaled
  int signal = 0;  // signal number when signaled

  bool ok() const { return !signaled && code == 0; }
  // "exit code 3" or "signal 9 (Killed)".
  std::string Describe() const;
  static ExitStatus FromWaitStatus(int wstatus);
};

// Starts argv[0] (a path, not searched in PATH) with stdin from /dev/null
// and stdout+stderr appended to `log_path` (created if missing; appending
// keeps the earlier log of a resumed run). The child gets SIGTERM if the
// launcher dies, so a kill -9 of the launcher leaves no orphans. Fails,
// without leaving a process behind, when the log cannot be opened or the
// binary cannot be executed.
absl::StatusOr<pid_t> SpawnWithLog(const std::vector<std::string>& argv,
                                   const std::string& log_path);

// Reaps `pid` if it has exited; nullopt while it still runs.
std::optional<ExitStatus> TryReap(pid_t pid);

// The last `n` lines of a text file (fewer if it is shorter; empty if it
// cannot be read). Reads only the file's tail, so large logs are cheap.
std::vector<std::string> LastLines(const std::string& path, int n);

}  // namespace shefl

#endif  // SHEFL_CLI_PROCESS_H_
