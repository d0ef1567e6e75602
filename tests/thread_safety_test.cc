// Locks the compiler checks (docs/DESIGN.md, "Conventions"): clang-14's
// thread-safety analysis over server/, client/ and the parts of common/ that
// hold a lock (tests/thread_safety_check.py, with each file's flags from the
// build's compile database), and a scratch file that reads a guarded field
// without its lock, which the same check must refuse.
#include <string>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

ProcessResult Check(const std::vector<std::string>& files) {
  std::vector<std::string> argv = {
      "/usr/bin/python3", std::string(SHEFL_SOURCE_DIR) + "/tests/thread_safety_check.py",
      std::string(SHEFL_BINARY_DIR) + "/compile_commands.json", SHEFL_SOURCE_DIR};
  argv.insert(argv.end(), files.begin(), files.end());
  return RunProcess(argv, 1200);
}

TEST_CASE("server, client and the locking code of common pass clang's thread-safety analysis") {
  const ProcessResult r = Check({});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("thread-safety analysis passed") != std::string::npos);
}

TEST_CASE("a guarded field read without its lock fails the analysis") {
  TempDir dir;
  const std::string bad = dir / "unguarded.cc";
  WriteFile(bad, R"(#include "common/core/mutex.h"
namespace shefl {
class Counter {
 public:
  void Add() { MutexLock lock(mu_); ++n_; }
  int Peek() const { return n_; }  // no lock
 private:
  mutable Mutex mu_;
  int n_ ABSL_GUARDED_BY(mu_) = 0;
};
int Use() { Counter c; c.Add(); return c.Peek(); }
}  // namespace shefl
)");
  const ProcessResult r = Check({bad});
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("reading variable 'n_' requires holding mutex 'mu_'") !=
        std::string::npos);
  CHECK(r.output.find("unguarded.cc") != std::string::npos);
}

}  // namespace
}  // namespace shefl
