#include "cli/run_command.h"

#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/endpoints.h"
#include "cli/launch_record.h"
#include "cli/live_status.h"
#include "cli/ports.h"
#include "cli/progress.h"
#include "cli/python_check.h"
#include "cli/restarter.h"
#include "cli/run_plan.h"
#include "cli/run_state.h"
#include "cli/supervisor.h"
#include "common/core/config.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"
#include "common/net/certs.h"

namespace shefl {
namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t g_stop = 0;

void OnStopSignal(int) { g_stop = 1; }

// No SA_RESTART: a pending sleep or read returns early, so Ctrl-C is
// noticed within one poll.
void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

int Fail(const std::string& message) {
  std::cerr << "shefl: " << message << "\n";
  return 1;
}

// Refuses what would start processes only to fail, or mix two runs'
// rounds.jsonl in one folder.
absl::Status CheckBeforeStart(const RunArgs& args, const std::string& dir,
                              const std::string& bin_dir) {
  for (const char* bin : {"shefl-coordinator", "shefl-client"}) {
    std::string path = absl::StrCat(bin_dir, "/", bin);
    if (access(path.c_str(), X_OK) != 0) {
      return absl::NotFoundError(absl::StrCat(
          "cannot find ", bin, " next to shefl (looked for ", path, ")"));
    }
  }
  if (!args.python_clients.empty()) {
    const std::string python = PythonInterpreter(args);
    if (access(python.c_str(), X_OK) != 0)
      return absl::NotFoundError(absl::StrCat(
          "--python-clients: no Python interpreter at ", python, " (see --python)"));
    const std::string script = PythonScript(args, bin_dir);
    if (access(script.c_str(), R_OK) != 0)
      return absl::NotFoundError(absl::StrCat(
          "--python-clients: cannot read the Python client program ", script,
          " (see --python-script)"));
    SHEFL_RETURN_IF_ERROR(CheckPythonClient(python, script));
  }
  const size_t daemons = args.daemons > 0 ? args.daemons : 1;
  if (args.capacity.size() > 1 && args.capacity.size() != daemons)
    return absl::InvalidArgumentError(absl::StrCat(
        "--capacity gives ", args.capacity.size(), " values for ", daemons,
        " daemon(s); give one, or one per daemon"));
  std::error_code ec;
  bool has_rounds = fs::exists(dir + "/rounds.jsonl", ec);
  if (args.resume.empty() && has_rounds) {
    return absl::AlreadyExistsError(absl::StrCat(
        "results folder ", dir, " already holds a run (rounds.jsonl); use "
        "--resume ", dir, " or another --out"));
  }
  if (!args.resume.empty() && !fs::is_directory(dir, ec)) {
    return absl::NotFoundError(
        absl::StrCat("--resume: no run folder ", dir));
  }
  fs::create_directories(dir + "/logs", ec);
  if (!ec) fs::create_directories(dir + "/daemons", ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, "/logs: ", ec.message()));
  }
  return absl::OkStatus();
}

// The run's PKI: made on the first start; on --resume the CA and token
// stay and only missing client certificates are added (more daemons).
absl::Status EnsureRunCerts(const std::string& certs, int daemons) {
  std::error_code ec;
  auto have = [&](const std::string& name) {
    return fs::exists(certs + "/" + name, ec);
  };
  if (have("ca.key") && have("token") &&
      have(absl::StrCat("client-", daemons - 1, ".pem")))
    return absl::OkStatus();
  PkiOptions o;
  o.out_dir = certs;
  o.hosts = {"127.0.0.1", "localhost"};
  o.clients = daemons;
  o.reuse_ca = have("ca.key");
  o.write_token = !have("token");
  return MakeDevPki(o);
}

enum class Started { kOk, kFailed, kInterrupted };

// Waits until the coordinator accepts TCP connections on `port`, giving up
// early when it exits (its log says why) or the user interrupts.
Started WaitUntilListening(Supervisor& group, int port) {
  absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (!PortAcceptsConnection(port)) {
    if (g_stop) return Started::kInterrupted;
    for (const ChildExit& e : group.Reap()) {
      std::cerr << FailureReport(e.name, e.status, group.LogPath(e.name));
      return Started::kFailed;
    }
    if (absl::Now() > deadline) {
      std::cerr << FailureReport(
          "coordinator", ExitStatus{}, group.LogPath("coordinator"));
      std::cerr << "shefl: the coordinator did not listen on 127.0.0.1:"
                << port << " within 60 s\n";
      return Started::kFailed;
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  return Started::kOk;
}

// Starts the daemons and records every endpoint; writes endpoints.json
// once with the coordinator alone (it already listens) and again with all.
absl::Status StartDaemons(Supervisor& group, const RunPlan& plan,
                          Endpoints& endpoints) {
  std::string path = plan.results_dir + "/endpoints.json";
  SHEFL_RETURN_IF_ERROR(WriteJsonAtomically(path, EndpointsToJson(endpoints)));
  for (const ChildCommand& d : plan.daemons) {
    SHEFL_ASSIGN_OR_RETURN(pid_t pid, group.Start(d.name, d.argv, d.log_path));
    endpoints.daemons.push_back({d.name, static_cast<int>(pid), d.metrics});
  }
  return WriteJsonAtomically(path, EndpointsToJson(endpoints));
}

void PrintStarted(const RunPlan& plan, const Endpoints& endpoints) {
  std::vector<std::string> ranges;
  for (const ChildCommand& d : plan.daemons)
    for (size_t i = 0; i + 1 < d.argv.size(); ++i)
      if (d.argv[i] == "--clients") ranges.push_back(d.argv[i + 1]);
  std::cerr << "shefl: coordinator pid " << endpoints.coordinator_pid
            << " on " << plan.coordinator_grpc << ", " << plan.daemons.size()
            << " daemon(s) with clients " << absl::StrJoin(ranges, ", ")
            << "; logs in " << plan.results_dir << "/logs\n";
}

// RUN_DIR/failure.txt, so `shefl ls` and `status` say "failed" and why,
// not "stopped": the coordinator's clean stop leaves a summary.json too.
void RecordFailure(const std::string& dir, const WatchResult& result) {
  std::ofstream(dir + "/" + kFailureFile) << result.failure << "\n" << result.report;
}

int Finish(const WatchResult& result, const std::string& dir) {
  switch (result.outcome) {
    case WatchOutcome::kChildFailed:
      RecordFailure(dir, result);
      std::cerr << result.report << "results: " << dir << "\n";
      return 1;
    case WatchOutcome::kInterrupted:
      std::cerr << "shefl: interrupted; stopped all processes\n"
                << "results: " << dir << "\n"
                << "resume with: shefl run --resume " << dir << "\n";
      return 130;
    case WatchOutcome::kCompleted:
      break;
  }
  std::cerr << result.report;
  std::ifstream in(dir + "/summary.json");
  nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (in && !summary.is_discarded()) {
    std::cerr << FormatSummaryLine(summary) << "\n";
  } else {
    std::cerr << "warning: the coordinator wrote no readable summary.json\n";
  }
  std::cerr << "results: " << dir << "\n";
  return 0;
}

// Who hosts which clients: the Python process's, and each C++ daemon's.
struct ClientLayout {
  ClientSet python;
  std::vector<ClientSet> ranges;
  // The parties a run starts: its C++ daemons and the Python process.
  int parties() const {
    return static_cast<int>(ranges.size()) + (python.ids.empty() ? 0 : 1);
  }
};

absl::StatusOr<ClientLayout> LayOutClients(const RunArgs& args,
                                           const ExperimentConfig& config) {
  // One daemon by default: it runs as many tasks at once as there are
  // cores, from one queue, so no core idles while another has work.
  ClientLayout l;
  if (!args.python_clients.empty()) {
    SHEFL_ASSIGN_OR_RETURN(
        l.python,
        ParsePythonClients(args.python_clients, config.clients.num_clients));
  }
  l.ranges = SplitClients(config.clients.num_clients,
                          args.daemons > 0 ? args.daemons : 1, l.python);
  return l;
}

// A secure run whose daemons cannot reach secure.min_parties would train
// and learn nothing (every session not_run): refused before anything starts.
absl::Status CheckSecureParties(const ClientLayout& layout,
                                const ExperimentConfig& config) {
  if (config.aggregation.secure == "off") return absl::OkStatus();
  const int parties = layout.parties();
  const int64_t need = config.secure.min_parties;
  if (parties >= need) return absl::OkStatus();
  // secure.min_parties is 2 at least: one party's sum is its own update.
  const std::string lower =
      parties >= 2 ? absl::StrCat(", or --set secure.min_parties=", parties,
                                   " (fewer parties reveal more of each one's "
                                   "update; docs/SECURITY.md)")
                    : "";
  return absl::InvalidArgumentError(absl::StrCat(
      "aggregation.secure = ", config.aggregation.secure, " needs at least "
      "secure.min_parties = ", need, " daemons training each model, and this run "
      "starts ", parties, ": use --daemons ", need, " or more", lower));
}

// Everything after the config is known to be good.
int Launch(const RunArgs& args, const ExperimentConfig& config,
           const std::string& config_path, const std::string& dir,
           const std::string& bin_dir, const ClientLayout& layout) {
  const ClientSet& python = layout.python;
  const std::vector<ClientSet>& ranges = layout.ranges;
  const int peers = layout.parties();
  int threads = args.threads > 0 ? args.threads
                                 : DefaultThreads(static_cast<int>(ranges.size()));
  absl::StatusOr<std::vector<int>> ports =
      PickFreePorts(2 + static_cast<int>(ranges.size()));
  if (!ports.ok()) return Fail(std::string(ports.status().message()));
  if (!args.insecure)
    if (auto st = EnsureRunCerts(CertsDir(dir), peers);
        !st.ok())
      return Fail(std::string(st.message()));
  if (auto st = SaveLaunch(dir, args, static_cast<int>(ranges.size()), threads);
      !st.ok())
    return Fail(std::string(st.message()));
  std::error_code gone;
  fs::remove(dir + "/" + kFailureFile, gone);  // a new sitting
  RunArgs slowed = args;
  slowed.slow_daemons = static_cast<size_t>(
      std::ceil(config.clients.slow_fraction * static_cast<double>(ranges.size())));
  slowed.slowdown = config.clients.slowdown;
  RunPlan plan = MakeRunPlan(slowed, config_path, dir, ranges, bin_dir, *ports,
                             threads, python);

  InstallStopHandlers();
  Supervisor group;  // its destructor terminates anything left running
  const ChildCommand& c = plan.coordinator;
  absl::StatusOr<pid_t> pid = group.Start(c.name, c.argv, c.log_path);
  if (!pid.ok()) return Fail(std::string(pid.status().message()));
  Started started = WaitUntilListening(group, (*ports)[0]);
  if (started != Started::kOk) {
    group.TerminateAll(absl::Seconds(10));
    return started == Started::kInterrupted ? 130 : 1;
  }
  Endpoints endpoints{plan.coordinator_grpc, c.metrics, static_cast<int>(*pid), {}};
  endpoints.launcher_pid = static_cast<int>(getpid());  // for `shefl stop`
  if (absl::Status s = StartDaemons(group, plan, endpoints); !s.ok()) {
    group.TerminateAll(absl::Seconds(10));
    return Fail(std::string(s.message()));
  }
  PrintStarted(plan, endpoints);

  const std::string endpoints_path = dir + "/endpoints.json";
  DaemonRestarter restarter(
      group, plan, args.max_restarts, [&](const std::string& name, pid_t pid) {
        for (auto& d : endpoints.daemons)
          if (d.name == name) d.pid = static_cast<int>(pid);
        (void)WriteJsonAtomically(endpoints_path, EndpointsToJson(endpoints));
      });
  JsonlTailer tailer(dir + "/rounds.jsonl");
  // The coordinator's /metrics, "127.0.0.1:PORT".
  const int metrics_port = std::atoi(c.metrics.substr(c.metrics.rfind(':') + 1).c_str());
  LiveStatus status(std::cerr, metrics_port, config.clients.num_clients,
                    isatty(STDERR_FILENO) == 1);
  WatchOptions options;
  options.primary = "coordinator";
  options.stop = &g_stop;
  options.on_failure = [&restarter](const ChildExit& e) {
    return restarter.OnFailure(e);
  };
  nlohmann::json last_evaluated;  // the latest line with figures of its own
  options.on_tick = [&tailer, &config, &restarter, &status, &last_evaluated] {
    restarter.Tick();
    JsonlTailer::Batch batch = tailer.Poll();
    if (!batch.records.empty() || batch.malformed > 0) status.Clear();
    for (const nlohmann::json& round : batch.records) {
      std::cerr << FormatRoundLine(round, config.rounds,
                                   last_evaluated.is_null() ? nullptr : &last_evaluated)
                << "\n";
      if (IsEvaluated(round)) last_evaluated = round;
    }
    if (batch.malformed > 0) {
      std::cerr << "warning: " << batch.malformed
                << " malformed line(s) in rounds.jsonl\n";
    }
    status.Tick();
  };
  const WatchResult watched = Watch(group, options);
  status.Clear();
  return Finish(watched, dir);
}

}  // namespace

int RunExperiment(const RunArgs& given, const std::string& bin_dir) {
  RunArgs args = given;
  // A resumed run is launched as it was (cli/launch_record.h).
  if (!args.resume.empty())
    if (auto st = RestoreLaunch(args.resume, &args); !st.ok())
      return Fail(std::string(st.message()));
  // With --resume and no CONFIG, the run's own resolved config is the file.
  std::string config_path =
      args.config.empty() ? args.resume + "/config.yaml" : args.config;
  absl::StatusOr<ExperimentConfig> config =
      LoadConfig(config_path, args.overrides);
  if (!config.ok()) return Fail(std::string(config.status().message()));
  std::string dir = ResolveResultsDir(args, *config, std::time(nullptr));
  absl::StatusOr<ClientLayout> layout = LayOutClients(args, *config);
  if (!layout.ok()) return Fail(std::string(layout.status().message()));
  if (absl::Status s = CheckSecureParties(*layout, *config); !s.ok())
    return Fail(std::string(s.message()));
  if (absl::Status s = CheckBeforeStart(args, dir, bin_dir); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  return Launch(args, *config, config_path, dir, bin_dir, *layout);
}

}  // namespace shefl
