// The command lines of a coordinator and a daemon on 127.0.0.1 for tests
// that run them as processes (plaintext, one thread each, results under
// the test's folder).
#ifndef SHEFL_TESTS_LOCAL_PROCESSES_H_
#define SHEFL_TESTS_LOCAL_PROCESSES_H_

#include <string>
#include <vector>

#include "tests/test_support.h"

namespace shefl::testing {

// shefl-coordinator on `port` with dir/c.yaml, results in dir/run, and
// each of `sets` as --set.
inline std::vector<std::string> CoordinatorArgv(
    const TempDir& dir, int port, const std::vector<std::string>& sets) {
  std::vector<std::string> argv = {
      BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml", "--listen",
      "127.0.0.1:" + std::to_string(port), "--out", dir / "run", "--threads",
      "1", "--insecure"};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  return argv;
}

// shefl-client `name` hosting `clients` ("0-3", "3,7"), books in
// dir/run/daemons, and `extra` flags.
inline std::vector<std::string> DaemonArgv(
    const TempDir& dir, int port, const std::string& name,
    const std::string& clients, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> argv = {
      BinDir() + "/shefl-client", "--coordinator",
      "127.0.0.1:" + std::to_string(port), "--clients", clients, "--name", name,
      "--out", dir / "run/daemons", "--threads", "1", "--insecure"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return argv;
}

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_LOCAL_PROCESSES_H_
