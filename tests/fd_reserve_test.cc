// The descriptor reserve: a process whose every other descriptor is taken
// (as a coordinator's can be by a flood of connections) still writes its
// files, durably. Each case runs in a child process with a low open-file
// limit, so the test's own process keeps its descriptors.
#include "common/core/fd_reserve.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>

#include "common/core/durable_file.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Runs `body` in a child whose soft open-file limit is 128 and whose free
// descriptors were all taken first; returns its exit code.
int InExhaustedChild(bool reserve, const std::function<int()>& body) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    rlimit r{128, 128};
    if (::setrlimit(RLIMIT_NOFILE, &r) != 0) ::_exit(90);
    if (reserve && HoldFileReserve(8) != 8) ::_exit(91);
    int taken = 0;
    while (::open("/dev/null", O_RDONLY) >= 0) ++taken;
    if (errno != EMFILE || taken == 0) ::_exit(92);
    ::_exit(body());
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST_CASE("with every descriptor taken, files are still written through the reserve",
          "[fd_reserve]") {
  testing::TempDir dir;
  const std::string path = dir / "checkpoint.bin";
  const std::string log = dir / "rounds.jsonl";
  const int code = InExhaustedChild(true, [&] {
    if (!WriteFileDurably(path, "weights").ok()) return 1;
    if (!AppendDurably(log, "{\"round\":1}\n").ok()) return 2;
    if (!AppendDurably(log, "{\"round\":2}\n").ok()) return 3;
    return 0;
  });
  CHECK(code == 0);
  CHECK(testing::ReadFile(path) == "weights");
  CHECK(testing::ReadFile(log) == "{\"round\":1}\n{\"round\":2}\n");
}

TEST_CASE("without the reserve the same write fails for want of descriptors",
          "[fd_reserve]") {
  testing::TempDir dir;
  const std::string path = dir / "checkpoint.bin";
  const int code = InExhaustedChild(false, [&] {
    const absl::Status st = WriteFileDurably(path, "weights");
    return st.ok() ? 0 : 1;
  });
  CHECK(code == 1);
}

TEST_CASE("the reserve is taken back once descriptors are free again",
          "[fd_reserve]") {
  testing::TempDir dir;
  const std::string path = dir / "f";
  const int code = InExhaustedChild(true, [&] {
    if (!WriteFileDurably(path, "a").ok()) return 1;
    // Given up for the write; the opens after it took back only what was
    // free then.
    if (FileReserveHeld() >= 8) return 2;
    for (int fd = 200; fd > 2; --fd) ::close(fd);  // the flood goes away
    const int fd = OpenWithReserve(path.c_str(), O_RDONLY);
    if (fd < 0) return 3;
    ::close(fd);
    return FileReserveHeld() == 8 ? 0 : 4;
  });
  CHECK(code == 0);
}

}  // namespace
}  // namespace shefl
