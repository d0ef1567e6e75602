// What `shefl run` will start, computed without side effects: the results
// folder, how logical clients are split over daemons, and each child's
// command line. Kept pure so tests can check the plan without processes.
#ifndef SHEFL_CLI_RUN_PLAN_H_
#define SHEFL_CLI_RUN_PLAN_H_

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "cli/launch_args.h"
#include "common/config.h"

namespace shefl {

// Logical clients first..last, inclusive (the daemon's --clients A-B).
struct ClientRange {
  int64_t first = 0;
  int64_t last = 0;
  int64_t size() const { return last - first + 1; }
};

// Splits clients 0..num_clients-1 into contiguous ranges whose sizes differ
// by at most one, earlier ranges taking the remainder. Returns
// min(num_daemons, num_clients) ranges: a daemon without clients would only
// idle, so extra daemons are not started.
std::vector<ClientRange> SplitClients(int64_t num_clients, int num_daemons);

// The results folder: --resume, else --out, else the config's out_dir, else
// results/<name>-<YYYYmmdd-HHMMSS> (local time `now`), relative to the cwd.
std::string ResolveResultsDir(const RunArgs& args,
                              const ExperimentConfig& config, std::time_t now);

// Threads per daemon when --threads is not given: the CPUs this process may
// use shared evenly, at least one.
int DefaultThreads(int num_daemons);

struct ChildCommand {
  std::string name;               // "coordinator", "daemon-0", ...
  std::vector<std::string> argv;  // argv[0] is the binary's path
  std::string log_path;
  std::string metrics;            // "127.0.0.1:R"
};

struct RunPlan {
  std::string results_dir;
  ChildCommand coordinator;
  std::string coordinator_grpc;   // "127.0.0.1:P"
  std::vector<ChildCommand> daemons;
};

// Where `shefl run` keeps the run's development PKI and token (unless
// --insecure): ca.pem, server.pem/.key, client-<i>.pem/.key, token.
std::string CertsDir(const std::string& results_dir);

// Builds the plan. `ports` holds 2 + daemons free ports: coordinator gRPC,
// coordinator metrics, then one metrics port per daemon in order. `config`
// is the file given to the coordinator (CONFIG, or RUN_DIR/config.yaml).
RunPlan MakeRunPlan(const RunArgs& args, const std::string& config_path,
                    const std::string& results_dir,
                    const std::vector<ClientRange>& ranges,
                    const std::string& bin_dir, const std::vector<int>& ports,
                    int threads);

}  // namespace shefl

#endif  // SHEFL_CLI_RUN_PLAN_H_
