#include "cli/process.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace shefl {

std::string ExitStatus::Describe() const {
  if (!signaled) return absl::StrCat("exit code ", code);
  const char* name = strsignal(signal);
  return absl::StrCat("signal ", signal, name ? absl::StrCat(" (", name, ")") : "");
}

ExitStatus ExitStatus::FromWaitStatus(int wstatus) {
  ExitStatus s;
  if (WIFSIGNALED(wstatus)) {
    s.signaled = true;
    s.signal = WTERMSIG(wstatus);
  } else {
    s.code = WEXITSTATUS(wstatus);
  }
  return s;
}

namespace {

// Runs in the forked child: only async-signal-safe calls, since the parent
// may have other threads (LibTorch starts some) whose locks are frozen here.
// On failure it writes errno to `err_fd` and exits 127.
[[noreturn]] void ExecChild(char* const* argv, int log_fd, int err_fd,
                            pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  // The parent may have died between fork and prctl; then nobody would
  // ever send the death signal.
  if (getppid() != parent) _exit(127);
  // Signal dispositions and mask are inherited; give the child the defaults
  // so that our SIGTERM reaches it as it would from a shell.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGINT, SIG_DFL);
  signal(SIGTERM, SIG_DFL);
  signal(SIGPIPE, SIG_DFL);
  // Close-on-exec: only the dup2'd copy on fd 0 may reach the program.
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 ||
      dup2(log_fd, 2) < 0) {
    int e = errno;
    (void)!write(err_fd, &e, sizeof(e));
    _exit(127);
  }
  // Whatever else this process holds (descriptors it inherited from its
  // own parent, a test runner's pipes) must not reach the program.
  close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  execv(argv[0], argv);
  int e = errno;
  (void)!write(err_fd, &e, sizeof(e));
  _exit(127);
}

}  // namespace

absl::StatusOr<pid_t> SpawnWithLog(const std::vector<std::string>& argv,
                                   const std::string& log_path) {
  if (argv.empty()) return absl::InvalidArgumentError("empty command line");
  // Everything that allocates happens before fork.
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  int log_fd = open(log_path.c_str(),
                    O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::InternalError(
        absl::StrCat("cannot open log ", log_path, ": ", strerror(errno)));
  }
  // A close-on-exec pipe tells us whether execv succeeded: it reads EOF on
  // success, the child's errno on failure.
  int err_pipe[2];
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(log_fd);
    return absl::InternalError(absl::StrCat("pipe: ", strerror(errno)));
  }
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) ExecChild(cargv.data(), log_fd, err_pipe[1], parent);
  int fork_errno = errno;
  close(log_fd);
  close(err_pipe[1]);
  if (pid < 0) {
    close(err_pipe[0]);
    return absl::InternalError(absl::StrCat("fork: ", strerror(fork_errno)));
  }
  int child_errno = 0;
  ssize_t n;
  do {
    n = read(err_pipe[0], &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n > 0) {
    waitpid(pid, nullptr, 0);
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot execute ", argv[0], ": ", strerror(child_errno)));
  }
  return pid;
}

std::optional<ExitStatus> TryReap(pid_t pid) {
  int wstatus = 0;
  pid_t r;
  do {
    r = waitpid(pid, &wstatus, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) return ExitStatus::FromWaitStatus(wstatus);
  if (r < 0 && errno == ECHILD) {
    // Already reaped elsewhere or not ours: gone, and with an unknown end,
    // which must not pass for a clean exit (a run would then "complete").
    ExitStatus unknown;
    unknown.code = 255;
    return unknown;
  }
  return std::nullopt;
}

std::vector<std::string> LastLines(const std::string& path, int n) {
  constexpr std::streamoff kTailBytes = 64 * 1024;
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || n <= 0) return {};
  std::streamoff size = in.tellg();
  std::streamoff start = size > kTailBytes ? size - kTailBytes : 0;
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  // The first line may be cut by the 64 KiB window; drop it unless it is
  // the real start of the file.
  if (start > 0 && !lines.empty()) lines.erase(lines.begin());
  if (static_cast<int>(lines.size()) > n) {
    lines.erase(lines.begin(), lines.end() - n);
  }
  return lines;
}

}  // namespace shefl
