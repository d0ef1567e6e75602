#include "cli/python_check.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/process.h"

namespace shefl {
namespace {

// What the probe imports, in the order a user would install them: the
// first failure is the one to fix.
constexpr const char* kProbe =
    "import sys\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import numpy, torch, grpc, google.protobuf\n"
    "try:\n"
    "    import shefl_client._proto.shefl_pb2\n"
    "except ImportError as e:\n"
    "    print('shefl-stubs-missing:', e)\n"
    "    sys.exit(3)\n";

std::string LastLine(const std::string& log) {
  std::vector<std::string> lines = LastLines(log, 1);
  return lines.empty() ? std::string("(no output)") : lines.back();
}

}  // namespace

absl::Status CheckPythonClient(const std::string& python,
                               const std::string& script) {
  namespace fs = std::filesystem;
  const std::string package =
      (fs::absolute(fs::path(script)).parent_path() / "..").lexically_normal();
  char log[] = "/tmp/shefl-python-check-XXXXXX";
  const int fd = mkstemp(log);
  if (fd < 0) return absl::OkStatus();  // no probe: the client's log will say
  close(fd);
  auto pid = SpawnWithLog({python, "-c", kProbe, package}, log);
  if (!pid.ok()) {
    std::remove(log);
    return pid.status();
  }
  // Importing PyTorch takes a second or two; a minute is a hung interpreter.
  std::optional<ExitStatus> done;
  for (int i = 0; i < 600 && !(done = TryReap(*pid)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  if (!done) {
    kill(*pid, SIGKILL);
    while (!TryReap(*pid)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string last = LastLine(log);
  std::remove(log);
  if (done && done->ok()) return absl::OkStatus();
  if (done && !done->signaled && done->code == 3)
    return absl::FailedPreconditionError(absl::StrCat(
        "--python-clients: the Python client's gRPC modules are not built (",
        last, "): build them with `cmake --build build --target "
        "shefl_python_stubs` (scripts/run.sh ... --python-clients does)"));
  return absl::FailedPreconditionError(absl::StrCat(
      "--python-clients: ", python, " cannot run the Python client: ",
      done ? last : std::string("the import probe hung for 60 s"),
      ". On Debian 12: sudo apt install python3-torch python3-grpcio "
      "python3-protobuf python3-numpy (scripts/run.sh ... --python-clients "
      "installs them), or give another interpreter with --python"));
}

}  // namespace shefl
