#include "cli/proc_identity.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace shefl {
namespace {

std::string ReadProcFile(int pid, const char* name) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/", name), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// /proc/PID/stat: "pid (comm) S ppid ..."; comm may hold spaces and
// parentheses, so the fields are read after the last ')'.
std::string StatAfterComm(int pid) {
  const std::string stat = ReadProcFile(pid, "stat");
  const size_t close = stat.rfind(')');
  return close == std::string::npos ? "" : stat.substr(close + 1);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The value of `--out` or `--resume` (spaced or `=`) names run_dir.
bool ArgvNamesFolder(const std::vector<std::string>& argv,
                     const std::string& run_dir) {
  for (size_t i = 1; i < argv.size(); ++i) {
    for (const char* flag : {"--out", "--resume"}) {
      const std::string f = flag;
      if (argv[i] == f && i + 1 < argv.size() && SameFolder(argv[i + 1], run_dir))
        return true;
      if (argv[i].rfind(f + "=", 0) == 0 &&
          SameFolder(argv[i].substr(f.size() + 1), run_dir))
        return true;
    }
  }
  return false;
}

}  // namespace

std::vector<std::string> ProcessArgv(int pid) {
  if (pid <= 0) return {};
  const std::string rest = StatAfterComm(pid);
  if (rest.size() < 2 || rest[1] == 'Z' || rest[1] == 'X') return {};
  const std::string cmdline = ReadProcFile(pid, "cmdline");
  std::vector<std::string> argv;
  size_t start = 0;
  for (size_t i = 0; i < cmdline.size(); ++i) {
    if (cmdline[i] != '\0') continue;
    argv.push_back(cmdline.substr(start, i - start));
    start = i + 1;
  }
  return argv;
}

int ParentPid(int pid) {
  if (pid <= 0) return 0;
  const std::string rest = StatAfterComm(pid);  // " S PPID ..."
  if (rest.size() < 4) return 0;
  return std::atoi(rest.c_str() + 3);
}

bool SameFolder(const std::string& a, const std::string& b) {
  std::error_code ec;  // a folder that is gone is no match
  return std::filesystem::equivalent(a, b, ec) && !ec;
}

bool IsRunCoordinator(int pid, const std::string& run_dir) {
  const std::vector<std::string> argv = ProcessArgv(pid);
  return !argv.empty() && Basename(argv[0]) == "shefl-coordinator" &&
         ArgvNamesFolder(argv, run_dir);
}

bool IsRunLauncher(int pid, const std::string& run_dir, int coordinator_pid) {
  const std::vector<std::string> argv = ProcessArgv(pid);
  if (argv.size() < 2 || Basename(argv[0]) != "shefl" || argv[1] != "run")
    return false;
  return (coordinator_pid > 0 && ParentPid(coordinator_pid) == pid) ||
         ArgvNamesFolder(argv, run_dir);
}

bool IsProgram(int pid, const std::string& program) {
  const std::vector<std::string> argv = ProcessArgv(pid);
  return !argv.empty() && Basename(argv[0]) == program;
}

}  // namespace shefl
