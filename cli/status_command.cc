#include "cli/status_command.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cli/command_preamble.h"
#include "cli/live_status.h"
#include "cli/proc_identity.h"

namespace shefl {
namespace {

int64_t Get(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : static_cast<int64_t>(it->second);
}

// "127.0.0.1:9100" -> 9100; 0 when there is no port.
int PortOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? 0 : std::atoi(address.c_str() + colon + 1);
}

std::string Percent(const std::optional<double>& a) {
  return a ? absl::StrFormat("%.1f%%", 100 * *a) : "-";
}

std::string ResumeHint(const RunInfo& info) {
  return absl::StrCat("; resume with: shefl run --resume ", info.dir);
}

// round.mode buffered: the applications so far, the tasks in flight, each
// model's buffer fill and the mean staleness applied; "" for a
// synchronous run (those series stay at zero).
std::string BufferedPhase(const std::map<std::string, double>& m) {
  const double applied = Get(m, "shefl_buffer_applications_total");
  const double in_flight = Get(m, "shefl_tasks_in_flight");
  if (applied == 0 && in_flight == 0) return "";
  std::vector<std::string> fill;
  for (const auto& [key, value] : m)
    if (key.rfind("shefl_buffer_fill{", 0) == 0) {
      const size_t q = key.find('"');
      fill.push_back(absl::StrCat(
          "model ", key.substr(q + 1, key.rfind('"') - q - 1), " ", value));
    }
  const double n = Get(m, "shefl_update_staleness_count");
  return absl::StrFormat(
      "; buffered: %.0f applications, %.0f tasks in flight, buffers %s, mean "
      "staleness %.2f",
      applied, in_flight, fill.empty() ? "-" : absl::StrJoin(fill, ", "),
      n > 0 ? Get(m, "shefl_update_staleness_sum") / n : 0.0);
}

// The phase of a run whose coordinator answers on /metrics.
std::string LivePhase(const RunInfo& info, const std::map<std::string, double>& m) {
  StatusFigures f;
  f.round = Get(m, "shefl_round");
  f.rounds_planned = Get(m, "shefl_rounds_planned");
  f.connected = Get(m, "shefl_clients_connected");
  f.num_clients = info.num_clients;
  f.quorum = Get(m, "shefl_clients_quorum");
  f.uploads_expected = Get(m, "shefl_round_uploads_expected");
  f.uploads_received = Get(m, "shefl_round_uploads_received");
  for (const auto& [key, value] : m)
    if (key.rfind("shefl_bytes_total{", 0) == 0 &&
        key.find("direction=\"up\"") != std::string::npos)
      f.bytes_up += value;
  f.eta_s = -1;  // the ETA has its own line
  if (Get(m, "shefl_run_finished") == 1) return "finished (the coordinator is closing)";
  // FormatStatusLine says "waiting for clients: ..." or "round N/M: ...".
  const std::string line = FormatStatusLine(f);
  return (line.rfind("round ", 0) == 0 ? "training " + line : line) +
         BufferedPhase(m);
}

std::string FilePhase(const RunInfo& info) {
  const std::string of = absl::StrCat(info.rounds_done, " of ", info.rounds_planned);
  switch (info.state) {
    case RunState::kFinished:
      return absl::StrCat("finished: ", of, " rounds");
    case RunState::kRunning:
      return info.rounds_done == 0
                 ? "running, before its first round ended"
                 : absl::StrCat("running, round ", info.rounds_done, " of ",
                                info.rounds_planned, " recorded");
    case RunState::kStopped:
      return absl::StrCat("stopped after round ", of, ResumeHint(info));
    case RunState::kResumable:
      return absl::StrCat("crashed after round ", of,
                          " (the coordinator is gone; its checkpoint is there)",
                          ResumeHint(info));
    case RunState::kFailed:
      return absl::StrCat("failed after round ", of, ": ", info.failure,
                          " (", info.dir, "/", kFailureFile, ")");
    case RunState::kCrashed:
      return absl::StrCat("crashed before its first checkpoint; see ", info.dir,
                          "/logs/coordinator.log");
  }
  return "";
}

std::string ProcessesLine(const RunInfo& info) {
  if (info.state != RunState::kRunning || !info.endpoints) return "none running";
  std::string s = absl::StrCat("coordinator pid ", info.endpoints->coordinator_pid);
  if (info.launcher_alive)
    absl::StrAppend(&s, ", started by shefl run pid ", info.endpoints->launcher_pid);
  return s;
}

std::string DaemonsLine(const RunInfo& info,
                        const std::map<std::string, std::string>& states) {
  if (!info.endpoints || info.endpoints->daemons.empty()) return "-";
  std::vector<std::string> parts;
  for (const DaemonEndpoint& d : info.endpoints->daemons) {
    auto it = states.find(d.name);
    parts.push_back(absl::StrCat(d.name, " ", it == states.end() ? "-" : it->second,
                                 " (pid ", d.pid, ")"));
  }
  return absl::StrJoin(parts, ", ");
}

// What a daemon says of itself on its /metrics (shefl_client_state).
std::string DaemonState(const DaemonEndpoint& d) {
  if (!IsProgram(d.pid, "shefl-client")) return "gone";
  const std::string text = FetchLocalMetrics(PortOf(d.metrics), absl::Milliseconds(500));
  if (text.empty()) return "not answering";
  for (const auto& [key, value] : ParsePrometheusText(text)) {
    const std::string prefix = "shefl_client_state{state=\"";
    if (key.rfind(prefix, 0) == 0 && value == 1)
      return key.substr(prefix.size(), key.size() - prefix.size() - 2);
  }
  return "up";
}

}  // namespace

std::string StatusUsage() {
  return "usage: shefl status RUN_DIR\n"
         "\n"
         "Where the run in RUN_DIR stands, from any terminal: its state (as\n"
         "`shefl ls` shows it) and phase (waiting for clients, training round\n"
         "N, finished, stopped, crashed), the coordinator's and daemons'\n"
         "processes, connected and missing clients and the quorum, rounds\n"
         "done, best accuracy and an ETA (the mean round's wall time in\n"
         "rounds.jsonl times the rounds left). Live figures are read from\n"
         "the coordinator's /metrics, whose address endpoints.json records;\n"
         "when it does not answer, status says so and reports the files.\n"
         "Exit status: 0 reported, 1 RUN_DIR is not a run folder, 2 usage.\n";
}

std::string FormatRunStatus(const RunInfo& info,
                            const std::map<std::string, double>& metrics,
                            const std::map<std::string, std::string>& daemon_states) {
  const bool live = info.state == RunState::kRunning && !metrics.empty();
  auto row = [](const std::string& k, const std::string& v) {
    return absl::StrFormat("%-10s %s\n", k, v);
  };
  std::string out = row("run", absl::StrCat(info.dir, " (", info.name, ", method ",
                                            info.method, ")"));
  absl::StrAppend(&out, row("state", RunStateName(info.state)),
                  row("phase", live ? LivePhase(info, metrics) : FilePhase(info)),
                  row("processes", ProcessesLine(info)));
  if (live) {
    absl::StrAppend(&out, row("clients", absl::StrCat(
        Get(metrics, "shefl_clients_connected"), "/", info.num_clients,
        " connected, ", Get(metrics, "shefl_clients_missing"), " missing (quorum ",
        Get(metrics, "shefl_clients_quorum"), ")")));
  }
  if (info.state == RunState::kRunning)
    absl::StrAppend(&out, row("daemons", DaemonsLine(info, daemon_states)));
  absl::StrAppend(&out, row("rounds", absl::StrCat(
      info.rounds_done, " of ", info.rounds_planned, " done; best accuracy ",
      Percent(info.best_accuracy), ", last ", Percent(info.last_accuracy))));
  const double eta = EtaSeconds(info);
  if (info.state == RunState::kRunning && eta >= 0)
    absl::StrAppend(&out, row("ETA", absl::StrCat(
        "about ", FormatWall(eta), " (", info.rounds_planned - info.rounds_done,
        " rounds left at the mean round's wall time)")));
  if (info.state == RunState::kRunning && metrics.empty() && info.endpoints)
    absl::StrAppend(&out, row("metrics", absl::StrCat(
        "the coordinator's /metrics at ", info.endpoints->metrics,
        " does not answer: figures from the files alone")));
  return out;
}

namespace {

// RUN_DIR, the one argument.
absl::StatusOr<std::string> Parse(const std::vector<std::string>& args) {
  if (args.size() < 2) return absl::InvalidArgumentError("RUN_DIR is required");
  if (args[1].rfind("-", 0) == 0)
    return absl::InvalidArgumentError("unknown flag for status: " + args[1]);
  if (args.size() > 2)
    return absl::InvalidArgumentError("status takes one RUN_DIR");
  return args[1];
}

// The report `shefl status` prints; exit 1 when dir is no run folder.
int Report(const std::string& dir) {
  absl::StatusOr<RunInfo> info = ReadRunInfo(dir);
  if (!info.ok()) {
    std::cerr << "shefl status: " << info.status().message() << "\n";
    return 1;
  }
  std::map<std::string, double> metrics;
  std::map<std::string, std::string> daemons;
  if (info->state == RunState::kRunning && info->endpoints) {
    const std::string text =
        FetchLocalMetrics(PortOf(info->endpoints->metrics), absl::Seconds(2));
    if (!text.empty()) metrics = ParsePrometheusText(text);
    for (const DaemonEndpoint& d : info->endpoints->daemons) daemons[d.name] = DaemonState(d);
  }
  std::cout << FormatRunStatus(*info, metrics, daemons);
  return 0;
}

}  // namespace

int StatusCommand(const std::vector<std::string>& args) {
  return RunCommand(args, "status", StatusUsage(), Parse, Report);
}

}  // namespace shefl
