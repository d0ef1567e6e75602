// `shefl stop RUN_DIR [--timeout-s S]`: stops a running run cleanly and
// leaves it resumable. SIGTERM goes to the `shefl run` that started it
// (endpoints.json's launcher_pid), which passes it to every child, or, for
// a coordinator started without one, to the coordinator: it abandons the
// open round, checkpoints and exits 0. Then it waits for the processes to
// be gone, with a progress line, and says how to resume.
#ifndef SHEFL_CLI_STOP_COMMAND_H_
#define SHEFL_CLI_STOP_COMMAND_H_

#include <string>
#include <vector>

namespace shefl {

std::string StopUsage();

// `args` starts with "stop". Exit status: 0 stopped, 1 not running, not a
// run folder, or still running after --timeout-s; 2 usage error.
int StopCommand(const std::vector<std::string>& args);

}  // namespace shefl

#endif  // SHEFL_CLI_STOP_COMMAND_H_
