// Tests of the `shefl` launcher: pure planning and parsing, sockets on
// 127.0.0.1, real child processes (/bin/sh), and whole `shefl run`s against
// stand-in children (shefl_fake_child).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/endpoints.h"
#include "cli/launch_args.h"
#include "cli/live_status.h"
#include "cli/ports.h"
#include "cli/process.h"
#include "cli/progress.h"
#include "cli/report.h"
#include "cli/run_plan.h"
#include "cli/supervisor.h"
#include "common/core/flags.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace fs = std::filesystem;
using namespace shefl;

namespace {

using shefl::testing::TempDir;

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void Append(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::app) << text << std::flush;
}

bool Alive(pid_t pid) { return kill(pid, 0) == 0; }

CommandLine Parse(std::vector<std::string> args) {
  absl::StatusOr<CommandLine> cl = ParseCommandLine(args);
  REQUIRE(cl.ok());
  return *cl;
}

std::string ParseError(std::vector<std::string> args) {
  absl::StatusOr<CommandLine> cl = ParseCommandLine(args);
  REQUIRE_FALSE(cl.ok());
  return std::string(cl.status().message());
}

}  // namespace

TEST_CASE("SplitClients deals every client once in near-equal sets") {
  for (int64_t clients : {1, 2, 7, 20, 100, 101}) {
    for (int daemons : {1, 2, 3, 7, 8, 150}) {
      std::vector<ClientSet> r = SplitClients(clients, daemons);
      REQUIRE(static_cast<int64_t>(r.size()) == std::min<int64_t>(clients, daemons));
      std::set<int64_t> seen;
      int64_t lo = clients, hi = 0;
      for (const ClientSet& c : r) {
        REQUIRE(c.size() >= 1);
        REQUIRE(std::is_sorted(c.ids.begin(), c.ids.end()));
        seen.insert(c.ids.begin(), c.ids.end());
        lo = std::min(lo, c.size());
        hi = std::max(hi, c.size());
      }
      REQUIRE(static_cast<int64_t>(seen.size()) == clients);  // no overlap
      REQUIRE(*seen.rbegin() == clients - 1);
      REQUIRE(hi - lo <= 1);
    }
  }
  // Dealt in turn: the low ids (the HPCs) are spread over the daemons.
  std::vector<ClientSet> r = SplitClients(7, 3);
  CHECK(r[0].ids == std::vector<int64_t>{0, 3, 6});
  CHECK(r[1].ids == std::vector<int64_t>{1, 4});
  CHECK(r[0].Spec() == "0-6/3");
  CHECK(r[1].Spec() == "1,4");
  CHECK(SplitClients(5, 1)[0].Spec() == "0-4");
  CHECK(ClientSet{{0, 1, 2, 5, 7, 8}}.Spec() == "0-2,5,7-8");
  CHECK(ClientSet{{0, 1, 2, 5, 7, 9, 10}}.Spec() == "0-2,5-9/2,10");
  CHECK(SplitClients(0, 2).empty());
  // 100,000 clients on 10 daemons: a short --clients each (a list of
  // 10,000 ids would be 60 KB of argv), which reads back to the same ids.
  const std::vector<ClientSet> big = SplitClients(100000, 10);
  CHECK(big[3].Spec() == "3-99993/10");
  for (const ClientSet& c : {big[0], big[9], r[0], r[1],
                             ClientSet{{0, 1, 2, 5, 7, 9, 10}},
                             ClientSet{{4, 9, 11, 13, 20}}}) {
    auto back = ParseIdRanges("--clients", c.Spec());
    REQUIRE(back.ok());
    CHECK(*back == c.ids);
  }
  // The step form is checked like the rest.
  for (const char* bad : {"0-10/0", "5/2", "0-10/x", "0-10/2/3", "10-0/2"})
    CHECK_FALSE(ParseIdRanges("--clients", bad).ok());
  CHECK_THAT(std::string(ParseIdRanges("--clients", "0-9/0").status().message()),
             Catch::Contains("--clients") && Catch::Contains("0-90/10"));
}

TEST_CASE("run arguments parse in both --flag value and --flag=value forms") {
  CommandLine cl = Parse({"run", "c.yaml", "--daemons", "3", "--out=o",
                          "--set", "rounds=3", "--set=compression.density=0.02",
                          "--threads", "4", "--device", "cpu",
                          "--eval-threads", "3", "--eval-nice=7"});
  REQUIRE(cl.command == CommandLine::Command::kRun);
  CHECK(cl.run.config == "c.yaml");
  CHECK(cl.run.daemons == 3);
  CHECK(cl.run.out == "o");
  CHECK(cl.run.overrides ==
        std::vector<std::string>{"rounds=3", "compression.density=0.02"});
  CHECK(cl.run.threads == 4);
  CHECK(cl.run.device == "cpu");
  CHECK(cl.run.eval_threads == 3);
  CHECK(cl.run.eval_nice == 7);
  CHECK(Parse({"run", "--resume", "results/x"}).run.resume == "results/x");
  CHECK(Parse({"report", "a", "b"}).report_dirs.size() == 2);
}

TEST_CASE("argument errors name the flag or subcommand") {
  CHECK_THAT(ParseError({"run", "c.yaml", "--bogus", "1"}),
             Catch::Contains("--bogus"));
  CHECK_THAT(ParseError({"frobnicate"}), Catch::Contains("frobnicate"));
  CHECK_THAT(ParseError({"--verbose"}), Catch::Contains("--verbose"));
  CHECK_THAT(ParseError({"run", "c.yaml", "--daemons", "0"}),
             Catch::Contains("--daemons"));
  CHECK_THAT(ParseError({"run", "c.yaml", "--daemons", "two"}),
             Catch::Contains("--daemons"));
  CHECK_THAT(ParseError({"run", "c.yaml", "--threads"}),
             Catch::Contains("--threads"));
  CHECK_THAT(ParseError({"run", "c.yaml", "--eval-threads", "0"}),
             Catch::Contains("--eval-threads"));
  CHECK_THAT(ParseError({"run", "c.yaml", "--eval-nice", "20"}),
             Catch::Contains("--eval-nice"));
  CHECK_THAT(ParseError({"run", "c.yaml", "--set", "rounds"}),
             Catch::Contains("--set"));
  CHECK_THAT(ParseError({"run"}), Catch::Contains("CONFIG"));
  CHECK_THAT(ParseError({"run", "a.yaml", "b.yaml"}), Catch::Contains("b.yaml"));
  CHECK_THAT(ParseError({"run", "--resume", "r", "--out", "o"}),
             Catch::Contains("--out"));
  CHECK_THAT(ParseError({"report", "--json"}), Catch::Contains("--json"));
  CHECK(Parse({"run", "--help"}).help_text == RunUsage());
  CHECK(Parse({}).help_text == MainUsage());
}

TEST_CASE("the results folder follows resume, --out, out_dir, then a default") {
  ExperimentConfig config;
  config.name = "quick";
  RunArgs args;
  std::time_t now = 1700000000;
  std::string dflt = ResolveResultsDir(args, config, now);
  CHECK(absl::StartsWith(dflt, "results/quick-"));
  CHECK(dflt.size() == std::string("results/quick-YYYYmmdd-HHMMSS").size());
  config.out_dir = "from_config";
  CHECK(ResolveResultsDir(args, config, now) == "from_config");
  args.out = "from_flag";
  CHECK(ResolveResultsDir(args, config, now) == "from_flag");
  args.out.clear();
  args.resume = "old_run";
  CHECK(ResolveResultsDir(args, config, now) == "old_run");
  CHECK(DefaultThreads(1000000) == 1);
  CHECK(DefaultThreads(1) >= 1);
}

TEST_CASE("the plan gives each child the flags of its contract") {
  RunArgs args;
  args.overrides = {"rounds=3"};
  args.device = "cpu";
  args.eval_threads = 4;
  RunPlan plan = MakeRunPlan(args, "c.yaml", "R", SplitClients(5, 2), "/b",
                             {1001, 1002, 1003, 1004}, 3);
  std::vector<std::string> coord = {
      "/b/shefl-coordinator", "--config", "c.yaml", "--set", "rounds=3",
      "--listen", "127.0.0.1:1001", "--metrics-listen", "127.0.0.1:1002",
      "--out", "R", "--threads", "1", "--eval-threads", "4", "--tls-cert",
      "R/certs/server.pem", "--tls-key", "R/certs/server.key", "--tls-client-ca", "R/certs/ca.pem",
      "--token-file", "R/certs/token"};
  CHECK(plan.coordinator.argv == coord);
  CHECK(plan.coordinator.log_path == "R/logs/coordinator.log");
  REQUIRE(plan.daemons.size() == 2);
  std::vector<std::string> d1 = {
      "/b/shefl-client", "--coordinator", "127.0.0.1:1001", "--clients", "1,3",
      "--name", "daemon-1", "--out", "R/daemons", "--metrics-listen",
      "127.0.0.1:1004", "--threads", "3", "--device", "cpu", "--tls-ca",
      "R/certs/ca.pem", "--tls-cert", "R/certs/client-1.pem", "--tls-key",
      "R/certs/client-1.key", "--token-file", "R/certs/token"};
  CHECK(plan.daemons[1].argv == d1);
  CHECK(plan.daemons[1].log_path == "R/logs/daemon-1.log");
  args.resume = "R";
  args.insecure = true;
  args.eval_nice = 5;
  plan = MakeRunPlan(args, "c.yaml", "R", SplitClients(5, 1), "/b",
                     {1001, 1002, 1003}, 3);
  const auto nice = std::find(plan.coordinator.argv.begin(),
                              plan.coordinator.argv.end(), "--eval-nice");
  REQUIRE(nice != plan.coordinator.argv.end());
  CHECK(*(nice + 1) == "5");
  // --insecure: a switch, last so that flag/value pairs stay aligned.
  const auto& ca = plan.coordinator.argv;
  CHECK(ca.back() == "--insecure");
  CHECK(ca[ca.size() - 2] == "R");
  CHECK(ca[ca.size() - 3] == "--resume");
  CHECK(plan.daemons[0].argv.back() == "--insecure");
}

TEST_CASE("the capacity flag reaches every daemon or one value per daemon") {
  CHECK(Parse({"run", "c.yaml", "--capacity", "3"}).run.capacity ==
        std::vector<int>{3});
  CHECK(Parse({"run", "c.yaml", "--capacity=5,3,0"}).run.capacity ==
        std::vector<int>{5, 3, 0});
  for (const char* bad : {"x", "-1", "2,,3", "1025", ""})
    CHECK_THAT(ParseError({"run", "c.yaml", "--capacity", bad}),
               Catch::Contains("--capacity"));
  auto capacity_of = [](const ChildCommand& d) {
    auto it = std::find(d.argv.begin(), d.argv.end(), "--capacity");
    return it == d.argv.end() ? std::string("none") : *(it + 1);
  };
  RunArgs args;
  args.capacity = {4};
  RunPlan plan = MakeRunPlan(args, "c.yaml", "R", SplitClients(5, 2), "/b",
                             {1001, 1002, 1003, 1004}, 1);
  CHECK(capacity_of(plan.daemons[0]) == "4");
  CHECK(capacity_of(plan.daemons[1]) == "4");
  args.capacity = {5, 2};
  plan = MakeRunPlan(args, "c.yaml", "R", SplitClients(5, 2), "/b",
                     {1001, 1002, 1003, 1004}, 1);
  CHECK(capacity_of(plan.daemons[0]) == "5");
  CHECK(capacity_of(plan.daemons[1]) == "2");
  args.capacity.clear();
  plan = MakeRunPlan(args, "c.yaml", "R", SplitClients(5, 2), "/b",
                     {1001, 1002, 1003, 1004}, 1);
  CHECK(capacity_of(plan.daemons[0]) == "none");
}

TEST_CASE("python clients take their ids from the C++ daemons, to one Python client") {
  CHECK(Parse({"run", "c.yaml", "--python-clients", "0-1,5"}).run.python_clients == "0-1,5");
  CHECK(Parse({"run", "c.yaml", "--python-script=x.py"}).run.python_script == "x.py");
  auto set = ParsePythonClients("5,0-1,1", 6);
  REQUIRE(set.ok());
  CHECK(set->ids == std::vector<int64_t>{0, 1, 5});
  for (const char* bad : {"x", "2-1", "-1", "1-2-3", ""})
    CHECK_THAT(std::string(ParsePythonClients(bad, 6).status().message()),
               Catch::Contains("--python-clients"));
  CHECK_THAT(std::string(ParsePythonClients("4-6", 6).status().message()),
             Catch::Contains("client 6 is not below clients.num_clients = 6"));
  // The C++ daemons are dealt what is left.
  std::vector<ClientSet> sets = SplitClients(6, 2, *set);
  REQUIRE(sets.size() == 2);
  CHECK(sets[0].ids == std::vector<int64_t>{2, 4});
  CHECK(sets[1].ids == std::vector<int64_t>{3});
  CHECK(SplitClients(3, 2, *ParsePythonClients("0-2", 3)).empty());
  RunArgs args;
  args.python_script = "/s/client.py";
  RunPlan plan = MakeRunPlan(args, "c.yaml", "R", sets, "/b", {1001, 1002, 1003, 1004}, 2,
                             *set);
  REQUIRE(plan.daemons.size() == 3);
  std::vector<std::string> py = {
      "/usr/bin/python3", "/s/client.py", "--coordinator", "127.0.0.1:1001",
      "--clients", "0-1,5", "--name", "python-0", "--out", "R/daemons", "--threads", "2",
      "--tls-ca", "R/certs/ca.pem", "--tls-cert", "R/certs/client-2.pem", "--tls-key",
      "R/certs/client-2.key", "--token-file", "R/certs/token"};
  CHECK(plan.daemons[2].argv == py);
  CHECK(plan.daemons[2].log_path == "R/logs/python-0.log");
  CHECK(plan.daemons[2].metrics.empty());
  args.python = "/opt/py/bin/python3";
  args.insecure = true;
  plan = MakeRunPlan(args, "c.yaml", "R", sets, "/b", {1001, 1002, 1003, 1004}, 2, *set);
  CHECK(plan.daemons[2].argv.front() == "/opt/py/bin/python3");
  CHECK(plan.daemons[2].argv.back() == "--insecure");
}

TEST_CASE("free ports are distinct and bindable, and a probe sees a listener") {
  absl::StatusOr<std::vector<int>> ports = PickFreePorts(8);
  REQUIRE(ports.ok());
  REQUIRE(ports->size() == 8);
  REQUIRE(std::set<int>(ports->begin(), ports->end()).size() == 8);
  std::vector<int> fds;
  for (int port : *ports) {
    REQUIRE(port > 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    CHECK(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    fds.push_back(fd);
  }
  CHECK_FALSE(PortAcceptsConnection((*ports)[0]));  // bound, not listening
  REQUIRE(listen(fds[0], 4) == 0);
  CHECK(PortAcceptsConnection((*ports)[0]));
  for (int fd : fds) close(fd);
}

TEST_CASE("the tailer emits only complete rounds, each once") {
  TempDir dir;
  std::string path = dir / "rounds.jsonl";
  JsonlTailer tailer(path);
  CHECK(tailer.Poll().records.empty());  // no file yet
  Append(path, "{\"round\": 1, \"bytes_up\": 5}\n{\"round\": 2, \"by");
  JsonlTailer::Batch b = tailer.Poll();
  REQUIRE(b.records.size() == 1);
  CHECK(b.records[0]["round"] == 1);
  CHECK(tailer.Poll().records.empty());  // partial line still held back
  Append(path, "tes_up\": 7}\n");
  b = tailer.Poll();
  REQUIRE(b.records.size() == 1);
  CHECK(b.records[0]["round"] == 2);
  CHECK(b.records[0]["bytes_up"] == 7);
  Append(path, "not json\n\n{\"round\": 3}\n");
  b = tailer.Poll();
  CHECK(b.malformed == 1);
  REQUIRE(b.records.size() == 1);
  CHECK(b.records[0]["round"] == 3);
  CHECK(tailer.Poll().records.empty());
}

TEST_CASE("round and summary lines are formatted for people") {
  nlohmann::json round = {{"round", 3},          {"ensemble_accuracy", 0.8123},
                          {"ensemble_loss", 0.5321}, {"bytes_up", 1210000},
                          {"bytes_down", 4500000},   {"wall_seconds", 6.14}};
  CHECK(FormatRoundLine(round, 8) ==
        "round 3/8  acc 81.2%  loss 0.532  up 1.21 MB  down 4.50 MB  6.1 s");
  round["evaluation_round"] = 3;  // evaluated this round: as before
  CHECK(FormatRoundLine(round, 8) ==
        "round 3/8  acc 81.2%  loss 0.532  up 1.21 MB  down 4.50 MB  6.1 s");
  round["evaluated"] = true;
  // eval.every 2: round 4 has no figures of its own; the line shows round
  // 3's, named, and none before the first evaluation.
  const nlohmann::json between = {{"round", 4},         {"evaluated", false},
                                  {"evaluation_round", 3}, {"bytes_up", 1210000},
                                  {"bytes_down", 4500000}, {"wall_seconds", 6.14}};
  CHECK(FormatRoundLine(between, 8, &round) ==
        "round 4/8  acc 81.2% (round 3)  loss 0.532  up 1.21 MB  down 4.50 MB  6.1 s");
  CHECK(FormatRoundLine(between, 8) ==
        "round 4/8  acc -  loss -  up 1.21 MB  down 4.50 MB  6.1 s");
  CHECK_FALSE(IsEvaluated(between));
  CHECK(IsEvaluated(round));
  // A secure round says which members' sums were applied, and why not.
  nlohmann::json secure = between;
  secure["secure"] = {{"0", {{"outcome", "finished"}}},
                      {"1", {{"outcome", "not_run"}}},
                      {"2", {{"outcome", "not_run"}}},
                      {"3", {{"outcome", "abandoned"}, {"why", "x"}}}};
  CHECK(FormatRoundLine(secure, 8) ==
        "round 4/8  acc -  loss -  up 1.21 MB  down 4.50 MB  6.1 s  secure 1/4 "
        "(abandoned 1, not_run 2)");
  round.erase("evaluation_round");
  round.erase("evaluated");
  round["ensemble_accuracy"] = nullptr;  // a round without evaluation
  round.erase("ensemble_loss");
  CHECK(FormatRoundLine(round, 8) ==
        "round 3/8  acc -  loss -  up 1.21 MB  down 4.50 MB  6.1 s");
  CHECK(FormatMegabytes(123456789) == "123 MB");
  CHECK(FormatMegabytes(12345678) == "12.3 MB");
  nlohmann::json summary = {{"final_accuracy", 0.858},  {"best_accuracy", 0.86},
                            {"threshold", 0.8},         {"rounds_to_threshold", 3},
                            {"total_bytes_up", 9630000}, {"total_bytes_down", 36000000},
                            {"wall_seconds", 52.3}};
  CHECK(FormatSummaryLine(summary) ==
        "done: final acc 85.8%  best 86.0%  threshold 80.0% reached at round 3"
        "  up 9.63 MB  down 36.0 MB  wall 52.3 s");
  summary["rounds_to_threshold"] = nullptr;
  CHECK_THAT(FormatSummaryLine(summary), Catch::Contains("80.0% not reached"));
}

TEST_CASE("endpoints.json has exactly the contract's shape and is replaced whole") {
  TempDir dir;
  Endpoints e{"127.0.0.1:5000", "127.0.0.1:5001", 42,
              {{"daemon-0", 43, "127.0.0.1:5002"}, {"daemon-1", 44, "127.0.0.1:5003"}},
              41};
  std::string path = dir / "endpoints.json";
  REQUIRE(WriteJsonAtomically(path, nlohmann::json{{"old", true}}).ok());
  REQUIRE(WriteJsonAtomically(path, EndpointsToJson(e)).ok());
  nlohmann::json j = nlohmann::json::parse(Slurp(path));
  nlohmann::json expected = nlohmann::json::parse(R"({
    "coordinator": {"grpc": "127.0.0.1:5000", "metrics": "127.0.0.1:5001"},
    "daemons": [{"name": "daemon-0", "pid": 43, "metrics": "127.0.0.1:5002"},
                {"name": "daemon-1", "pid": 44, "metrics": "127.0.0.1:5003"}],
    "coordinator_pid": 42, "launcher_pid": 41})");
  CHECK(j == expected);
  // ReadEndpoints reads it back, and a file from before launcher_pid too.
  absl::StatusOr<Endpoints> back = ReadEndpoints(path);
  REQUIRE(back.ok());
  CHECK(EndpointsToJson(*back) == expected);
  nlohmann::json old_shape = expected;
  old_shape.erase("launcher_pid");
  REQUIRE(WriteJsonAtomically(path, old_shape).ok());
  back = ReadEndpoints(path);
  REQUIRE(back.ok());
  CHECK(back->launcher_pid == 0);
  CHECK(back->daemons.size() == 2);
  REQUIRE(WriteJsonAtomically(path, nlohmann::json{{"coordinator_pid", 1}}).ok());
  CHECK_THAT(std::string(ReadEndpoints(path).status().message()),
             Catch::Contains("endpoints.json is not an endpoints file"));
  int files = 0;
  for (auto& entry : fs::directory_iterator(dir.path())) files += entry.exists();
  CHECK(files == 1);  // no temp file left behind
  CHECK_FALSE(WriteJsonAtomically(dir / "missing/endpoints.json", j).ok());
}

TEST_CASE("spawned children log to their file and exec failures are errors") {
  TempDir dir;
  std::string log = dir / "child.log";
  absl::StatusOr<pid_t> pid =
      SpawnWithLog({"/bin/sh", "-c", "echo out; echo err >&2; exit 7"}, log);
  REQUIRE(pid.ok());
  std::optional<ExitStatus> st;
  for (int i = 0; i < 3000 && !st; ++i) {  // up to 30 s on a loaded machine
    st = TryReap(*pid);
    usleep(10000);
  }
  REQUIRE(st.has_value());
  CHECK(st->Describe() == "exit code 7");
  CHECK(Slurp(log) == "out\nerr\n");
  absl::StatusOr<pid_t> bad = SpawnWithLog({dir / "no-such-binary"}, log);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("no-such-binary"));
  CHECK_FALSE(SpawnWithLog({"/bin/true"}, dir / "no/dir/x.log").ok());
}

TEST_CASE("the live status line: waiting, then a round's uploads, bytes and ETA") {
  StatusFigures f;
  f.connected = 12;
  f.num_clients = 20;
  CHECK(FormatStatusLine(f) == "waiting for clients: 12/20 connected");
  f.round = 3;
  f.rounds_planned = 10;
  f.uploads_expected = 8;
  f.uploads_received = 6;
  f.bytes_up = 1.21e6;
  f.connected = 20;
  CHECK(FormatStatusLine(f) == "round 4/10: 6/8 uploads  up 1.21 MB");
  f.eta_s = 41.6;
  f.connected = 10;
  CHECK(FormatStatusLine(f) == "round 4/10: 6/8 uploads  up 1.21 MB  10/20 connected  ETA 42 s");
  f.quorum = 11;  // below the quorum, the round waits for clients
  CHECK(FormatStatusLine(f) ==
        "waiting for clients: 10/20 connected, below the quorum of 11");
  f.quorum = 10;
  CHECK(FormatStatusLine(f) == "round 4/10: 6/8 uploads  up 1.21 MB  10/20 connected  ETA 42 s");
  const auto m = ParsePrometheusText(
      "# HELP x\nshefl_round 3\nshefl_bytes_total{direction=\"up\",tier=\"hpc\"} 5e5\n");
  CHECK(m.at("shefl_round") == 3);
  CHECK(m.at("shefl_bytes_total{direction=\"up\",tier=\"hpc\"}") == 5e5);
}

TEST_CASE("the live status line reads a real /metrics and redraws in place") {
  // One HTTP server on 127.0.0.1 that answers every GET with these metrics.
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(listen(fd, 4) == 0);
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const int port = ntohs(a.sin_port);
  std::thread server([fd] {
    const std::string body =
        "shefl_round 1\nshefl_rounds_planned 5\nshefl_clients_connected 8\n"
        "shefl_round_uploads_expected 4\nshefl_round_uploads_received 3\n"
        "shefl_bytes_total{direction=\"up\",tier=\"lpc\"} 2000000\n"
        "shefl_bytes_total{direction=\"down\",tier=\"lpc\"} 9000000\n";
    for (int i = 0; i < 2; ++i) {
      const int c = accept(fd, nullptr, nullptr);
      if (c < 0) return;
      char buf[1024];
      (void)recv(c, buf, sizeof(buf), 0);
      const std::string reply = "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body;
      (void)send(c, reply.data(), reply.size(), MSG_NOSIGNAL);
      close(c);
    }
  });
  CHECK_THAT(FetchLocalMetrics(port, absl::Seconds(2)), Catch::Contains("shefl_round 1"));
  std::ostringstream out;
  LiveStatus status(out, port, 8, /*enabled=*/true);
  status.Tick();
  CHECK(out.str() == "\r\033[Kround 2/5: 3/4 uploads  up 2.00 MB");
  status.Clear();
  CHECK(out.str().size() > std::string("\r\033[Kround 2/5: 3/4 uploads  up 2.00 MB").size());
  server.join();
  close(fd);
  // Nothing listening: no line, no error.
  std::ostringstream none;
  LiveStatus gone(none, port, 8, true);
  gone.Tick();
  CHECK(none.str().empty());
  // Not a terminal: never a line.
  std::ostringstream off;
  LiveStatus disabled(off, port, 8, false);
  disabled.Tick();
  CHECK(off.str().empty());
}

TEST_CASE("a child inherits no stray descriptor and an unknown end is not success") {
  TempDir dir;
  const std::string log = dir / "fds.log";
  // ls lists its own descriptors: /dev/null only as stdin, the log as
  // stdout and stderr, and nothing of this test process's.
  absl::StatusOr<pid_t> pid = SpawnWithLog({"/bin/ls", "-l", "/proc/self/fd/"}, log);
  REQUIRE(pid.ok());
  int wstatus = 0;
  REQUIRE(waitpid(*pid, &wstatus, 0) == *pid);  // reaped here, behind TryReap
  int nulls = 0;
  for (size_t at = Slurp(log).find("/dev/null"); at != std::string::npos;
       at = Slurp(log).find("/dev/null", at + 1))
    ++nulls;
  INFO(Slurp(log));
  CHECK(nulls == 1);
  CHECK(Slurp(log).find("pipe:") == std::string::npos);
  // Already reaped (ECHILD): gone, but not a clean exit.
  std::optional<ExitStatus> st = TryReap(*pid);
  REQUIRE(st.has_value());
  CHECK_FALSE(st->ok());
}

TEST_CASE("LastLines returns the tail of a log") {
  TempDir dir;
  std::string path = dir / "log";
  for (int i = 1; i <= 30; ++i) Append(path, absl::StrCat("line ", i, "\n"));
  std::vector<std::string> tail = LastLines(path, 20);
  REQUIRE(tail.size() == 20);
  CHECK(tail.front() == "line 11");
  CHECK(tail.back() == "line 30");
  CHECK(LastLines(dir / "missing", 20).empty());
}

TEST_CASE("a failing child is reported with its log and the others stopped") {
  TempDir dir;
  Supervisor group;
  pid_t primary = *group.Start("coordinator", {"/bin/sh", "-c", "exec sleep 60"},
                               dir / "coordinator.log");
  pid_t other = *group.Start("daemon-0", {"/bin/sh", "-c", "exec sleep 60"},
                             dir / "daemon-0.log");
  REQUIRE(group.Start("daemon-1",
                      {"/bin/sh", "-c",
                       "for i in $(seq 1 25); do echo step $i; done; sleep 0.3; exit 3"},
                      dir / "daemon-1.log")
              .ok());
  int ticks = 0;
  WatchOptions options;
  options.primary = "coordinator";
  options.poll = absl::Milliseconds(50);
  options.on_tick = [&ticks] { ++ticks; };
  WatchResult r = Watch(group, options);
  CHECK(r.outcome == WatchOutcome::kChildFailed);
  CHECK_THAT(r.report,
             Catch::StartsWith("daemon-1 failed (exit code 3); last log lines:\n"));
  CHECK_THAT(r.report, Catch::Contains("  step 25\n"));
  CHECK_THAT(r.report, Catch::Contains("  step 6\n"));
  CHECK_FALSE(absl::StrContains(r.report, "step 5\n"));  // only the last 20
  CHECK(ticks > 0);
  CHECK(group.NumRunning() == 0);
  CHECK_FALSE(Alive(primary));  // reaped, not left as zombies either
  CHECK_FALSE(Alive(other));
}

TEST_CASE("a child killed by a signal counts as failed") {
  TempDir dir;
  Supervisor group;
  REQUIRE(group.Start("coordinator", {"/bin/sh", "-c", "exec sleep 60"},
                      dir / "c.log").ok());
  REQUIRE(group.Start("daemon-0", {"/bin/sh", "-c", "echo dying; kill -9 $$"},
                      dir / "d.log").ok());
  WatchOptions options;
  options.primary = "coordinator";
  WatchResult r = Watch(group, options);
  CHECK(r.outcome == WatchOutcome::kChildFailed);
  CHECK_THAT(r.report, Catch::StartsWith("daemon-0 failed (signal 9"));
  CHECK_THAT(r.report, Catch::Contains("dying"));
}

TEST_CASE("after the primary exits 0 the others drain, then are terminated") {
  TempDir dir;
  Supervisor group;
  REQUIRE(group.Start("coordinator", {"/bin/sh", "-c", "sleep 0.2"},
                      dir / "c.log").ok());
  REQUIRE(group.Start("daemon-0", {"/bin/sh", "-c", "sleep 0.5"},
                      dir / "d0.log").ok());
  // Ignores SIGTERM: only SIGKILL after the grace period ends it.
  pid_t stubborn = *group.Start(
      "daemon-1", {"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"},
      dir / "d1.log");
  WatchOptions options;
  options.primary = "coordinator";
  // A drain far longer than daemon-0's 0.5 s, so a loaded machine cannot
  // make it look stubborn; only daemon-1 waits the drain out.
  options.drain = absl::Seconds(10);
  options.kill_grace = absl::Milliseconds(300);
  absl::Time start = absl::Now();
  WatchResult r = Watch(group, options);
  CHECK(r.outcome == WatchOutcome::kCompleted);
  CHECK_THAT(r.report, Catch::Contains("daemon-1 ignored SIGTERM; killed"));
  CHECK_FALSE(absl::StrContains(r.report, "daemon-0"));  // it left by itself
  CHECK(absl::Now() - start < absl::Seconds(60));  // bounded, not hung
  CHECK(group.NumRunning() == 0);
  CHECK_FALSE(Alive(stubborn));
}

TEST_CASE("a stop request terminates every child") {
  TempDir dir;
  Supervisor group;
  pid_t a = *group.Start("coordinator", {"/bin/sh", "-c", "exec sleep 60"}, dir / "a");
  pid_t b = *group.Start("daemon-0", {"/bin/sh", "-c", "exec sleep 60"}, dir / "b");
  volatile sig_atomic_t stop = 0;
  WatchOptions options;
  options.primary = "coordinator";
  options.stop = &stop;
  options.on_tick = [&stop] { stop = 1; };
  CHECK(Watch(group, options).outcome == WatchOutcome::kInterrupted);
  CHECK_FALSE(Alive(a));
  CHECK_FALSE(Alive(b));
}

TEST_CASE("report reads summary.json and config.yaml into a table") {
  TempDir dir;
  fs::create_directories(dir / "run1");
  Append(dir / "run1/config.yaml", "name: quick\nrounds: 8\n");
  Append(dir / "run1/summary.json",
         R"({"rounds": 8, "final_accuracy": 0.858, "best_accuracy": 0.86,
             "rounds_to_threshold": 3, "total_bytes_up": 9630000,
             "total_bytes_down": 36000000})");
  absl::StatusOr<ReportRow> row = ReadReportRow(dir / "run1");
  REQUIRE(row.ok());
  CHECK(row->name == "quick");
  CHECK(row->rounds == 8);
  CHECK(row->rounds_to_threshold == 3);
  std::string table = FormatReportTable({*row});
  CHECK_THAT(table, Catch::Contains("85.8%"));
  CHECK_THAT(table, Catch::Contains("36.00"));
  absl::StatusOr<ReportRow> missing = ReadReportRow(dir / "nope");
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(std::string(missing.status().message()), Catch::Contains("summary.json"));
}

// ---- whole `shefl run`s, with shefl_fake_child standing in for the children

namespace {

struct RunResult {
  int exit_code;
  std::string err;
};

// Runs build/bin/shefl with the fake children; `env` is prefixed (VAR=x ...).
RunResult RunShefl(const TempDir& dir, const std::string& env,
                   const std::string& args) {
  std::string bin = dir / "bin";
  fs::create_directories(bin);
  std::string fake = std::string(SHEFL_BINARY_DIR) + "/bin/shefl_fake_child";
  std::error_code ec;
  fs::create_symlink(fake, bin + "/shefl-coordinator", ec);
  fs::create_symlink(fake, bin + "/shefl-client", ec);
  std::string err = dir / "stderr";
  std::string cmd = absl::StrCat("SHEFL_BIN_DIR=", bin, " ", env, " ",
                                 SHEFL_BINARY_DIR, "/bin/shefl ", args, " 2>",
                                 err);
  int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, Slurp(err)};
}

const std::string kQuick = std::string(SHEFL_SOURCE_DIR) + "/configs/quick.yaml";

}  // namespace

TEST_CASE("shefl run starts, follows and ends a run") {
  TempDir dir;
  RunResult r = RunShefl(dir, "FAKE_ROUNDS=2",
                         "run " + kQuick + " --set rounds=2 --daemons 3 --out " +
                             (dir / "run"));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("round 1/2  acc 60.0%  loss 1.000  up 1.00 MB"));
  CHECK_THAT(r.err, Catch::Contains("round 2/2  acc 70.0%"));
  // Each round once, although its line reached the file in two writes.
  size_t first = r.err.find("round 1/2");
  CHECK(first != std::string::npos);
  CHECK(r.err.find("round 1/2", first + 1) == std::string::npos);
  CHECK_THAT(r.err, Catch::Contains("done: final acc 70.0%"));
  CHECK_THAT(r.err, Catch::Contains("results: " + (dir / "run")));
  nlohmann::json ep = nlohmann::json::parse(Slurp(dir / "run/endpoints.json"));
  REQUIRE(ep["daemons"].size() == 3);
  CHECK(ep["daemons"][2]["name"] == "daemon-2");
  CHECK(absl::StartsWith(ep["coordinator"]["grpc"].get<std::string>(), "127.0.0.1:"));
  CHECK_FALSE(Alive(ep["coordinator_pid"].get<int>()));
  for (auto& d : ep["daemons"]) CHECK_FALSE(Alive(d["pid"].get<int>()));
  // quick.yaml has 20 clients, dealt in turn: 7 + 7 + 6.
  CHECK_THAT(Slurp(dir / "run/logs/daemon-2.log"),
             Catch::Contains("clients 2-17/3 "));
  CHECK_THAT(Slurp(dir / "run/logs/daemon-0.log"), Catch::Contains("run over"));
  CHECK_THAT(Slurp(dir / "run/logs/coordinator.log"), Catch::Contains("done"));
  // The same folder again without --resume is refused before anything runs.
  RunResult again = RunShefl(dir, "", "run " + kQuick + " --out " + (dir / "run"));
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Catch::Contains("--resume"));
}

TEST_CASE("shefl run refuses a missing Python client program before anything runs") {
  TempDir dir;
  RunResult r = RunShefl(dir, "", "run " + kQuick + " --python-clients 0 --python-script " +
                                      (dir / "none.py") + " --out " + (dir / "run"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot read the Python client program"));
  CHECK_FALSE(fs::exists((dir / "run") + "/rounds.jsonl"));
}

TEST_CASE("shefl run refuses a Python interpreter that cannot run the client, naming what is missing") {
  TempDir dir;
  // An interpreter whose imports fail as on a machine without python3-torch.
  shefl::testing::WriteFile(dir / "python", "#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\n"
                            "exit 1\n");
  fs::permissions(dir / "python", fs::perms::owner_all);
  shefl::testing::WriteFile(dir / "client.py", "print('a client')\n");
  const std::string py = " --python-clients 0 --python-script " + (dir / "client.py") +
                         " --python " + (dir / "python");
  RunResult r = RunShefl(dir, "", "run " + kQuick + py + " --out " + (dir / "run"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot run the Python client: ModuleNotFoundError: "
                                    "No module named 'torch'"));
  CHECK_THAT(r.err, Catch::Contains("sudo apt install python3-torch"));
  CHECK_FALSE(fs::exists((dir / "run") + "/rounds.jsonl"));
  // The modules generated from proto/ missing: how to build them.
  shefl::testing::WriteFile(dir / "python", "#!/bin/sh\necho 'shefl-stubs-missing: No module named x'\nexit 3\n");
  RunResult stubs = RunShefl(dir, "", "run " + kQuick + py + " --out " + (dir / "run2"));
  CHECK(stubs.exit_code == 1);
  CHECK_THAT(stubs.err, Catch::Contains("--target shefl_python_stubs"));
}

TEST_CASE("shefl run refuses a --capacity list that does not match the daemons before anything runs") {
  TempDir dir;
  RunResult r = RunShefl(dir, "", "run " + kQuick + " --daemons 2 --capacity 1,2,3 --out " +
                                      (dir / "run"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("--capacity gives 3 values for 2 daemon(s)"));
  CHECK_FALSE(fs::exists(dir / "run"));
}

TEST_CASE("shefl run reports a failed coordinator with its log") {
  TempDir dir;
  RunResult r = RunShefl(dir, "FAKE_COORDINATOR_EXIT=3",
                         "run " + kQuick + " --out " + (dir / "run"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("coordinator failed (exit code 3); last log lines:"));
  CHECK_THAT(r.err, Catch::Contains("  fake coordinator: boom"));
}

TEST_CASE("shefl run stops everything when a daemon fails") {
  TempDir dir;
  RunResult r = RunShefl(dir, "FAKE_CLIENT_EXIT=4 FAKE_ROUNDS=20",
                         "run " + kQuick + " --max-restarts 0 --out " +
                             (dir / "run"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("failed (exit code 4); last log lines:"));
  CHECK_THAT(r.err, Catch::Contains("fake client: giving up"));
  nlohmann::json ep = nlohmann::json::parse(Slurp(dir / "run/endpoints.json"));
  CHECK_FALSE(Alive(ep["coordinator_pid"].get<int>()));
}

TEST_CASE("a daemon that cannot start ends the run at once, and ls says failed") {
  TempDir dir;
  RunResult r = RunShefl(dir, "FAKE_CLIENT_EXIT=3 FAKE_ROUNDS=20",
                         "run " + kQuick + " --daemons 2 --out " + (dir / "run"));
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot start (exit code 3): a restart "
                                    "would fail the same way; ending the run"));
  CHECK_THAT(r.err, !Catch::Contains("restarting in"));
  // The daemon's message once, not once per restart or per daemon.
  CHECK(testing::Occurrences(r.err, "fake client: giving up") == 1);
  const std::string failure = Slurp(dir / "run/failure.txt");
  CHECK_THAT(failure, Catch::StartsWith("daemon-") &&
                          Catch::Contains("failed (exit code 3): fake client: giving up"));
  auto listed = testing::RunProcess(
      {std::string(SHEFL_BINARY_DIR) + "/bin/shefl", "ls", dir / "run", "--json"}, 30);
  INFO(listed.output);
  const nlohmann::json runs = nlohmann::json::parse(listed.output);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0]["state"] == "failed");
  CHECK(runs[0]["resumable"] == false);
  auto status = testing::RunProcess(
      {std::string(SHEFL_BINARY_DIR) + "/bin/shefl", "status", dir / "run"}, 30);
  CHECK_THAT(status.output, Catch::Contains("failed after round") &&
                                Catch::Contains("fake client: giving up"));
}

TEST_CASE("shefl run restarts a daemon that dies and gives up after the limit") {
  TempDir dir;
  RunResult r = RunShefl(dir,
                         "FAKE_ROUNDS=8 FAKE_CLIENT_EXIT_ONCE=" + (dir / ""),
                         "run " + kQuick + " --daemons 2 --out " + (dir / "run"));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("daemon-0 exit code 9; restarting in 1 s "
                                    "(restart 1 of at most 5)"));
  CHECK_THAT(r.err, Catch::Contains("daemon-1 exit code 9; restarting in 1 s"));
  // Every daemon's log holds both lives.
  CHECK_THAT(Slurp(dir / "run/logs/daemon-0.log"),
             Catch::Contains("fake client: dying once"));
  CHECK_THAT(Slurp(dir / "run/logs/daemon-0.log"),
             Catch::Contains("fake client: run over"));

  TempDir dir2;
  RunResult bad = RunShefl(dir2, "FAKE_CLIENT_EXIT=4 FAKE_ROUNDS=20",
                           "run " + kQuick + " --max-restarts 1 --out " +
                               (dir2 / "run"));
  INFO(bad.err);
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.err, Catch::Contains("restarting in 1 s (restart 1 of at most 1)"));
  CHECK_THAT(bad.err, Catch::Contains("after 1 restarts; giving up"));
  CHECK_THAT(bad.err, Catch::Contains("failed (exit code 4); last log lines:"));
}

TEST_CASE("shefl run refuses a secure run its daemons cannot carry") {
  TempDir dir;
  // quick.yaml with one daemon: no model can have secure.min_parties = 5.
  RunResult r = RunShefl(dir, "", "run " + kQuick +
                                      " --set aggregation.secure=common_support --out " +
                                      (dir / "run"));
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("secure.min_parties = 5") &&
                        Catch::Contains("starts 1: use --daemons 5 or more"));
  CHECK_FALSE(fs::exists(dir / "run"));
  RunResult three = RunShefl(dir, "", "run " + kQuick +
                                          " --daemons 3 --set aggregation.secure=common_support --out " +
                                          (dir / "run"));
  CHECK(three.exit_code == 1);
  CHECK_THAT(three.err, Catch::Contains("or --set secure.min_parties=3"));
  // Enough daemons: it starts (the stand-ins run it).
  RunResult five = RunShefl(dir, "FAKE_ROUNDS=1",
                            "run " + kQuick + " --daemons 5 --set rounds=1 --set "
                            "aggregation.secure=common_support --out " + (dir / "run"));
  INFO(five.err);
  CHECK(five.exit_code == 0);
}

TEST_CASE("shefl run refuses a bad config before starting anything") {
  TempDir dir;
  RunResult r = RunShefl(dir, "", "run " + kQuick + " --set clients.num_clientz=3 --out " +
                                      (dir / "run"));
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("clients.num_clientz"));
  CHECK_FALSE(fs::exists(dir / "run"));
  RunResult usage = RunShefl(dir, "", "run " + kQuick + " --frobnicate");
  CHECK(usage.exit_code == 2);
  CHECK_THAT(usage.err, Catch::Contains("--frobnicate"));
}

namespace {

// Dead or a zombie: after the launcher itself is killed, its children are
// reaped by whoever inherits them, maybe late.
bool Gone(pid_t pid) {
  std::string stat = Slurp(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(')');
  return stat.empty() || paren == std::string::npos || stat[paren + 2] == 'Z';
}

// Starts `shefl run` with endless fake rounds, waits until endpoints.json
// lists both daemons, sends `sig` to the launcher and returns its wait
// status and the endpoints.
std::pair<int, nlohmann::json> SignalRunningShefl(const TempDir& dir, int sig) {
  std::string bin = dir / "bin";
  fs::create_directories(bin);
  std::string fake = std::string(SHEFL_BINARY_DIR) + "/bin/shefl_fake_child";
  fs::create_symlink(fake, bin + "/shefl-coordinator");
  fs::create_symlink(fake, bin + "/shefl-client");
  std::string out = dir / "run";
  std::string shefl = std::string(SHEFL_BINARY_DIR) + "/bin/shefl";
  std::string err = dir / "stderr";
  pid_t pid = fork();
  if (pid == 0) {
    setenv("SHEFL_BIN_DIR", bin.c_str(), 1);
    setenv("FAKE_ROUNDS", "100", 1);
    if (!freopen(err.c_str(), "w", stderr)) _exit(126);
    execl(shefl.c_str(), "shefl", "run", kQuick.c_str(), "--daemons", "2",
          "--out", out.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  nlohmann::json ep;
  for (int i = 0; i < 1200; ++i) {  // up to 60 s
    usleep(50000);
    ep = nlohmann::json::parse(Slurp(out + "/endpoints.json"), nullptr, false);
    if (!ep.is_discarded() && ep.contains("daemons") && ep["daemons"].size() == 2) break;
  }
  kill(pid, sig);
  int status = 0;
  waitpid(pid, &status, 0);
  return {status, ep};
}

}  // namespace

TEST_CASE("SIGTERM to shefl run stops the children and exits 130") {
  TempDir dir;
  auto [status, ep] = SignalRunningShefl(dir, SIGTERM);
  REQUIRE(ep["daemons"].size() == 2);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 130);
  CHECK_FALSE(Alive(ep["coordinator_pid"].get<int>()));
  for (auto& d : ep["daemons"]) CHECK_FALSE(Alive(d["pid"].get<int>()));
  CHECK_THAT(Slurp(dir / "stderr"), Catch::Contains("interrupted"));
}

TEST_CASE("kill -9 of shefl run leaves no orphans") {
  TempDir dir;
  auto [status, ep] = SignalRunningShefl(dir, SIGKILL);
  REQUIRE(ep["daemons"].size() == 2);
  REQUIRE(WIFSIGNALED(status));
  std::vector<pid_t> pids = {ep["coordinator_pid"].get<int>()};
  for (auto& d : ep["daemons"]) pids.push_back(d["pid"].get<int>());
  bool all_gone = false;
  for (int i = 0; i < 600 && !all_gone; ++i) {  // up to 30 s
    usleep(50000);
    all_gone = std::all_of(pids.begin(), pids.end(), Gone);
  }
  CHECK(all_gone);
}
