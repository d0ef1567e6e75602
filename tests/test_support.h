// Helpers for tests that run real processes and read real files.
#ifndef SHEFL_TESTS_TEST_SUPPORT_H_
#define SHEFL_TESTS_TEST_SUPPORT_H_

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace shefl::testing {

// A fresh directory under $TMPDIR, removed when the object goes.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const {
    return path_ + "/" + name;
  }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& text);
std::string ReadFile(const std::string& path);
// The complete (newline-ended) lines of a JSON-lines file.
std::vector<nlohmann::json> ReadJsonl(const std::string& path);

struct ProcessResult {
  int exit_code = -1;  // -1: killed by the timeout or a signal
  std::string output;  // stdout and stderr together
};

// Runs argv (argv[0] a path) with OPENBLAS_NUM_THREADS=1, waiting at most
// `timeout_s`; kills the process group on timeout.
ProcessResult RunProcess(const std::vector<std::string>& argv,
                         double timeout_s);

// Starts argv in its own process group, output to `log`; returns the pid.
int Spawn(const std::vector<std::string>& argv, const std::string& log);
// Waits for `pid`; its exit code, or -1 on signal or after `timeout_s`
// (then the group is killed).
int WaitFor(int pid, double timeout_s);

// A free TCP port on 127.0.0.1 (bound, read, released).
int FreePort();
// GET http://127.0.0.1:port/path; the body, or "" on failure (no answer
// within 10 s included). *status gets the HTTP status (0 on failure).
std::string HttpGet(int port, const std::string& path, int* status = nullptr);

// A TCP relay on 127.0.0.1 that forwards every connection to `target_port`
// and counts the bytes each way: what the kernel carried, to compare with
// what the code accounted.
class CountingRelay {
 public:
  explicit CountingRelay(int target_port);
  ~CountingRelay();
  int port() const { return port_; }
  uint64_t bytes_up() const { return up_; }      // client -> server
  uint64_t bytes_down() const { return down_; }  // server -> client

 private:
  void Accept();
  void Pump(int from, int to, std::atomic<uint64_t>* count);
  int target_, listen_fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> up_{0}, down_{0};
  std::vector<std::thread> threads_;
  std::mutex mu_;
};

std::string BinDir();  // build/bin

// k from a coordinator log's "resuming DIR after round k", or -1.
int ResumedAfter(const std::string& log);

// How many times `what` occurs in `text` (log lines, say).
int Occurrences(const std::string& text, const std::string& what);

// Polls `condition` every 20 ms until it holds (true) or `timeout_s` passes
// (false). Tests wait on conditions, never on fixed sleeps: the suite runs
// with -j nproc on a loaded machine.
bool WaitUntil(const std::function<bool()>& condition, double timeout_s);

// `shefl run`'s RUN_DIR/endpoints.json once it lists `daemons` daemons and
// the coordinator's pid (written as the processes start); a discarded
// json (is_discarded()) if that does not happen within `timeout_s`.
nlohmann::json WaitForEndpoints(const std::string& run_dir, size_t daemons,
                                double timeout_s);

// Prometheus text format to {series: value}, the series written as it is
// exposed (`shefl_bytes_total{direction="up",tier="hpc"}`); comments skipped.
std::map<std::string, double> ParseMetrics(const std::string& text);

// A small, fast experiment on the synthetic data set; `extra` is appended.
std::string SyntheticConfig(const std::string& extra = "");

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_TEST_SUPPORT_H_
