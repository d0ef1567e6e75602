// What `shefl run` will start, computed without side effects: the results
// folder, how logical clients are split over daemons, and each child's
// command line. Kept pure so tests can check the plan without processes.
#ifndef SHEFL_CLI_RUN_PLAN_H_
#define SHEFL_CLI_RUN_PLAN_H_

#include <cstdint>
#include <ctime>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/launch_args.h"
#include "common/core/config.h"

namespace shefl {

// The logical clients of one daemon, ascending.
struct ClientSet {
  std::vector<int64_t> ids;
  int64_t size() const { return static_cast<int64_t>(ids.size()); }
  // The daemon's --clients value: runs of consecutive ids as A-B, runs of
  // 3 or more with a larger step as A-B/S, the rest single,
  // comma-separated ("0-4", "0-8/2", "0,3").
  std::string Spec() const;
};

// Deals clients 0..num_clients-1 out to the daemons in turn (daemon i gets
// i, i+n, i+2n, ...), so every daemon holds its share of HPCs (the low
// ids) and of LPCs: a contiguous split gave one daemon every HPC and 5x
// the work. Returns min(num_daemons, num_clients) sets: a daemon without
// clients would only idle, so extra daemons are not started.
// Clients in `except` (the Python client's) are left out of the deal.
std::vector<ClientSet> SplitClients(int64_t num_clients, int num_daemons,
                                    const ClientSet& except = {});

// --python-clients RANGE ("0-1", "0,3,5-6"): ids ascending, each below
// num_clients; an error names the flag.
absl::StatusOr<ClientSet> ParsePythonClients(const std::string& spec,
                                             int64_t num_clients);

// The Python client program and interpreter: the flags, else the example
// beside the build (BIN_DIR/../../python/examples/fmnist_client.py) or
// under the working folder, and /usr/bin/python3.
std::string PythonScript(const RunArgs& args, const std::string& bin_dir);
std::string PythonInterpreter(const RunArgs& args);

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
  std::vector<ChildCommand> daemons;  // the C++ daemons, then the Python client
};

// Where `shefl run` keeps the run's development PKI and token (unless
// --insecure): ca.pem, server.pem/.key, client-<i>.pem/.key, token.
std::string CertsDir(const std::string& results_dir);

// Builds the plan. `ports` holds 2 + daemons free ports: coordinator gRPC,
// coordinator metrics, then one metrics port per daemon in order. `config`
// is the file given to the coordinator (CONFIG, or RUN_DIR/config.yaml).
// With `python` non-empty a Python client for those clients comes last,
// named python-0, with the next client certificate and no metrics port.
RunPlan MakeRunPlan(const RunArgs& args, const std::string& config_path,
                    const std::string& results_dir,
                    const std::vector<ClientSet>& sets,
                    const std::string& bin_dir, const std::vector<int>& ports,
                    int threads, const ClientSet& python = {});

}  // namespace shefl

#endif  // SHEFL_CLI_RUN_PLAN_H_
