// Whether a pid that a run folder recorded (endpoints.json) is still that
// process. A pid is reused once its process is gone, so a live pid alone
// proves nothing: these read /proc/PID to check what the process is and
// which run it serves. Free functions; thread-compatible.
#ifndef SHEFL_CLI_PROC_IDENTITY_H_
#define SHEFL_CLI_PROC_IDENTITY_H_

#include <string>
#include <vector>

namespace shefl {

// The argv of a live process; empty when it is gone, a zombie (exited, not
// yet reaped) or not readable.
std::vector<std::string> ProcessArgv(int pid);

// The parent pid, or 0 when the process is gone.
int ParentPid(int pid);

// True when `a` and `b` name the same existing folder (either may be
// relative, or a link).
bool SameFolder(const std::string& a, const std::string& b);

// `pid` is a live shefl-coordinator whose --out or --resume is run_dir.
bool IsRunCoordinator(int pid, const std::string& run_dir);

// `pid` is a live `shefl run` of run_dir: the parent of its coordinator
// (`coordinator_pid`), or given run_dir by --out or --resume.
bool IsRunLauncher(int pid, const std::string& run_dir, int coordinator_pid);

// `pid` is a live process whose program is called `program` (a daemon:
// "shefl-client").
bool IsProgram(int pid, const std::string& program);

}  // namespace shefl

#endif  // SHEFL_CLI_PROC_IDENTITY_H_
