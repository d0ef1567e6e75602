#include "cli/run_plan.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/core/flags.h"
#include "common/core/resources.h"
#include "common/core/status_macros.h"

namespace shefl {

std::string ClientSet::Spec() const {
  std::string out;
  for (size_t i = 0; i < ids.size();) {
    // The longest run from i with one step: A-B for step 1, A-B/S for a
    // larger step of at least 3 ids (a daemon's share of a deal in turn),
    // else the id alone.
    size_t j = i;
    const int64_t step = i + 1 < ids.size() ? ids[i + 1] - ids[i] : 1;
    while (j + 1 < ids.size() && ids[j + 1] - ids[j] == step) ++j;
    if (!out.empty()) out += ",";
    if (j > i && step == 1) {
      out += absl::StrCat(ids[i], "-", ids[j]);
    } else if (j >= i + 2) {
      out += absl::StrCat(ids[i], "-", ids[j], "/", step);
    } else {
      out += absl::StrCat(ids[i]);
      j = i;
    }
    i = j + 1;
  }
  return out;
}

std::vector<ClientSet> SplitClients(int64_t num_clients, int num_daemons,
                                    const ClientSet& except) {
  std::vector<ClientSet> sets;
  std::vector<int64_t> ids;
  for (int64_t id = 0; id < num_clients; ++id)
    if (!std::binary_search(except.ids.begin(), except.ids.end(), id))
      ids.push_back(id);
  if (ids.empty() || num_daemons <= 0) return sets;
  sets.resize(std::min<size_t>(num_daemons, ids.size()));
  for (size_t i = 0; i < ids.size(); ++i) sets[i % sets.size()].ids.push_back(ids[i]);
  return sets;
}

absl::StatusOr<ClientSet> ParsePythonClients(const std::string& spec,
                                             int64_t num_clients) {
  SHEFL_ASSIGN_OR_RETURN(auto ids, ParseIdRanges("--python-clients", spec));
  if (!ids.empty() && ids.back() >= num_clients)
    return absl::InvalidArgumentError(absl::StrCat(
        "--python-clients '", spec, "': client ", ids.back(),
        " is not below clients.num_clients = ", num_clients));
  ClientSet out;
  out.ids = std::move(ids);
  return out;
}

std::string PythonScript(const RunArgs& args, const std::string& bin_dir) {
  if (!args.python_script.empty()) return args.python_script;
  const std::string beside = bin_dir + "/../../python/examples/fmnist_client.py";
  std::error_code ec;
  if (std::filesystem::exists(beside, ec)) return beside;
  return "python/examples/fmnist_client.py";
}

std::string PythonInterpreter(const RunArgs& args) {
  return args.python.empty() ? "/usr/bin/python3" : args.python;
}

std::string ResolveResultsDir(const RunArgs& args,
                              const ExperimentConfig& config,
                              std::time_t now) {
  if (!args.resume.empty()) return args.resume;
  if (!args.out.empty()) return args.out;
  if (!config.out_dir.empty()) return config.out_dir;
  std::tm local{};
  localtime_r(&now, &local);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &local);
  return absl::StrCat("results/", config.name, "-", stamp);
}

int DefaultThreads(int num_daemons) {
  return std::max(1, UsableCores() / std::max(1, num_daemons));
}

namespace {

std::string Local(int port) { return absl::StrCat("127.0.0.1:", port); }

}  // namespace

std::string CertsDir(const std::string& results_dir) {
  return results_dir + "/certs";
}

namespace {

ChildCommand CoordinatorCommand(const RunArgs& args,
                                const std::string& config_path,
                                const std::string& dir,
                                const std::string& bin_dir,
                                const std::vector<int>& ports) {
  ChildCommand c;
  c.name = "coordinator";
  c.metrics = Local(ports[1]);
  c.log_path = dir + "/logs/coordinator.log";
  c.argv = {bin_dir + "/shefl-coordinator", "--config", config_path};
  for (const std::string& kv : args.overrides) {
    c.argv.insert(c.argv.end(), {"--set", kv});
  }
  // Its evaluation runs beside the daemons' training on the same cores, on
  // one torch thread; when the coordinator waits for it (the daemons are
  // idle then), as many threads as cores join in.
  const int eval_threads = args.eval_threads > 0 ? args.eval_threads : UsableCores();
  c.argv.insert(c.argv.end(), {"--listen", Local(ports[0]), "--metrics-listen",
                               c.metrics, "--out", dir, "--threads", "1",
                               "--eval-threads", absl::StrCat(eval_threads)});
  if (args.eval_nice > 0)
    c.argv.insert(c.argv.end(), {"--eval-nice", absl::StrCat(args.eval_nice)});
  if (!args.resume.empty()) c.argv.insert(c.argv.end(), {"--resume", dir});
  const std::string certs = CertsDir(dir);
  if (!args.insecure)
    c.argv.insert(c.argv.end(),
                  {"--tls-cert", certs + "/server.pem", "--tls-key",
                   certs + "/server.key", "--tls-client-ca", certs + "/ca.pem",
                   "--token-file", certs + "/token"});
  else
    c.argv.push_back("--insecure");  // last: a switch without a value
  return c;
}

// Daemon i's certificate, key and the token, or --insecure (last: a
// switch without a value).
void AddClientTls(const RunArgs& args, const std::string& results_dir, size_t i,
                  std::vector<std::string>* argv) {
  const std::string certs = CertsDir(results_dir);
  if (args.insecure) {
    argv->push_back("--insecure");
    return;
  }
  argv->insert(argv->end(), {"--tls-ca", certs + "/ca.pem", "--tls-cert",
                             absl::StrCat(certs, "/client-", i, ".pem"), "--tls-key",
                             absl::StrCat(certs, "/client-", i, ".key"), "--token-file",
                             certs + "/token"});
}

}  // namespace

RunPlan MakeRunPlan(const RunArgs& args, const std::string& config_path,
                    const std::string& results_dir,
                    const std::vector<ClientSet>& sets,
                    const std::string& bin_dir, const std::vector<int>& ports,
                    int threads, const ClientSet& python) {
  RunPlan plan;
  plan.results_dir = results_dir;
  plan.coordinator_grpc = Local(ports[0]);
  plan.coordinator =
      CoordinatorCommand(args, config_path, results_dir, bin_dir, ports);
  for (size_t i = 0; i < sets.size(); ++i) {
    ChildCommand d;
    d.name = absl::StrCat("daemon-", i);
    d.metrics = Local(ports[2 + i]);
    d.log_path = absl::StrCat(results_dir, "/logs/", d.name, ".log");
    d.argv = {bin_dir + "/shefl-client",
              "--coordinator", plan.coordinator_grpc,
              "--clients", sets[i].Spec(),
              "--name", d.name,
              "--out", results_dir + "/daemons",
              "--metrics-listen", d.metrics,
              "--threads", absl::StrCat(threads)};
    if (!args.device.empty()) d.argv.insert(d.argv.end(), {"--device", args.device});
    if (!args.capacity.empty()) {
      const int c = args.capacity[std::min(i, args.capacity.size() - 1)];
      d.argv.insert(d.argv.end(), {"--capacity", absl::StrCat(c)});
    }
    if (i < args.slow_daemons && args.slowdown > 1)
      d.argv.insert(d.argv.end(), {"--slowdown", absl::StrCat(args.slowdown)});
    AddClientTls(args, results_dir, i, &d.argv);
    plan.daemons.push_back(std::move(d));
  }
  if (!python.ids.empty()) {
    ChildCommand p;
    p.name = "python-0";
    p.log_path = results_dir + "/logs/python-0.log";
    p.argv = {PythonInterpreter(args), PythonScript(args, bin_dir),
              "--coordinator", plan.coordinator_grpc,
              "--clients", python.Spec(),
              "--name", p.name,
              "--out", results_dir + "/daemons",
              "--threads", absl::StrCat(threads)};
    if (!args.device.empty()) p.argv.insert(p.argv.end(), {"--device", args.device});
    // The certificate after the C++ daemons'.
    AddClientTls(args, results_dir, sets.size(), &p.argv);
    plan.daemons.push_back(std::move(p));
  }
  return plan;
}

}  // namespace shefl
