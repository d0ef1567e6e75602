// `shefl certs --kits` as a lab uses it: the kits it writes (the files,
// their modes, no other host's key or other daemon's token in any kit),
// its refusals, and a real run started from nothing but the kits'
// start.sh: a coordinator and two daemons under mutual TLS on 127.0.0.1,
// where one daemon's kit cannot take the other's clients.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

namespace fs = std::filesystem;
using testing::BinDir;
using testing::ProcessResult;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;

ProcessResult Certs(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {BinDir() + "/shefl", "certs"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, 120);
}

int Mode(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 0777;
}

// A kit's files by name, with their text.
std::map<std::string, std::string> KitFiles(const std::string& kit) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(kit))
    files[e.path().filename().string()] = ReadFile(e.path().string());
  return files;
}

std::set<std::string> Names(const std::map<std::string, std::string>& files) {
  std::set<std::string> names;
  for (const auto& [name, text] : files) names.insert(name);
  return names;
}

std::string Trimmed(const std::string& path) {
  return std::string(absl::StripAsciiWhitespace(ReadFile(path)));
}

// The secrets of the PKI in `pki` that `kit` ("coordinator", "client-<i>")
// must not hold: ca.key and the shared token always, and every key and
// daemon token that is not its own (the coordinator's `tokens` holds the
// daemons' tokens: it checks them).
std::map<std::string, std::string> ForeignSecrets(const std::string& pki,
                                                  const std::string& kit,
                                                  int daemons) {
  std::map<std::string, std::string> secrets = {
      {"ca.key", Trimmed(pki + "/ca.key")}, {"token", Trimmed(pki + "/token")}};
  if (kit != "coordinator")
    secrets["server.key"] = Trimmed(pki + "/server.key");
  for (int j = 0; j < daemons; ++j) {
    const std::string name = "client-" + std::to_string(j);
    if (name == kit) continue;
    secrets[name + ".key"] = Trimmed(pki + "/" + name + ".key");
    if (kit != "coordinator")
      secrets[name + ".token"] = Trimmed(pki + "/" + name + ".token");
  }
  return secrets;
}

void CheckNoForeignSecrets(const std::string& pki, const std::string& kit,
                           int daemons) {
  for (const auto& [file, text] : KitFiles(pki + "/kits/" + kit))
    for (const auto& [secret, value] : ForeignSecrets(pki, kit, daemons)) {
      INFO(kit << "/" << file << " holds the PKI's " << secret);
      CHECK_FALSE(absl::StrContains(text, value));
    }
}

TEST_CASE("shefl certs --kits writes a kit per host holding only its own secrets",
          "[certs][kits]") {
  TempDir dir;
  const std::string pki = dir / "pki";
  const ProcessResult r =
      Certs({"--kits", "--out", pki, "--hosts", "lab-1,10.0.0.1", "--clients",
             "3", "--port", "50999", "--daemon-clients", "0-3",
             "--daemon-clients", "4-5", "--daemon-clients", "6,8-10/2"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(absl::StrContains(r.output, pki + "/kits/coordinator to lab-1"));
  const std::string kits = pki + "/kits";
  std::set<std::string> kit_names;
  for (const auto& e : fs::directory_iterator(kits))
    kit_names.insert(e.path().filename().string());
  CHECK(kit_names == std::set<std::string>{"client-0", "client-1", "client-2",
                                           "coordinator"});
  CHECK(Mode(kits) == 0700);

  const auto coordinator = KitFiles(kits + "/coordinator");
  CHECK(Names(coordinator) ==
        std::set<std::string>{"README.txt", "ca.pem", "server.key",
                              "server.pem", "start.sh", "tokens"});
  for (const char* f : {"ca.pem", "server.pem", "server.key", "tokens"})
    CHECK(coordinator.at(f) == ReadFile(pki + "/" + f));
  const std::string& start = coordinator.at("start.sh");
  CHECK(absl::StrContains(start, "0.0.0.0:50999"));
  CHECK(absl::StrContains(start, "--tls-client-ca \"$kit/ca.pem\""));
  CHECK(absl::StrContains(start, "--token-file \"$kit/tokens\""));
  CHECK_FALSE(absl::StrContains(start, pki));  // paths come from its folder

  const std::vector<std::string> clients = {"0-3", "4-5", "6,8-10/2"};
  for (int i = 0; i < 3; ++i) {
    const std::string name = "client-" + std::to_string(i);
    INFO(name);
    const auto kit = KitFiles(kits + "/" + name);
    CHECK(Names(kit) == std::set<std::string>{"README.txt", "ca.pem",
                                              "client.key", "client.pem",
                                              "client.token", "coordinator",
                                              "start.sh"});
    CHECK(kit.at("client.pem") == ReadFile(pki + "/" + name + ".pem"));
    CHECK(kit.at("client.key") == ReadFile(pki + "/" + name + ".key"));
    CHECK(kit.at("client.token") == ReadFile(pki + "/" + name + ".token"));
    CHECK(kit.at("coordinator") == "lab-1:50999\n");
    CHECK(absl::StrContains(kit.at("start.sh"), "--name " + name +
                                                    " --clients '" +
                                                    clients[i] + "'"));
    CHECK_FALSE(absl::StrContains(kit.at("start.sh"), pki));
    const std::vector<std::string> readme =
        absl::StrSplit(kit.at("README.txt"), '\n', absl::SkipEmpty());
    CHECK(readme.size() == 3);
    CHECK(absl::StrContains(kit.at("README.txt"), "scp -rp " + kits + "/" + name));
    CHECK(absl::StrContains(kit.at("README.txt"), "./start.sh"));
  }

  for (const std::string kit : {"coordinator", "client-0", "client-1", "client-2"}) {
    INFO(kit);
    const std::string k = kits + "/" + kit;
    CHECK(Mode(k) == 0700);
    for (const auto& [file, text] : KitFiles(k)) {
      INFO(file);
      const bool secret = absl::EndsWith(file, ".key") ||
                          absl::EndsWith(file, "token") || file == "tokens";
      CHECK(Mode(k + "/" + file) ==
            (secret ? 0600 : file == "start.sh" ? 0755 : 0644));
    }
    CheckNoForeignSecrets(pki, kit, 3);
  }
}

TEST_CASE("shefl certs --kits --owner gives the kits, folders included, to the "
          "service's user", "[certs][kits]") {
  REQUIRE(::geteuid() == 0);  // giving files away needs root; CI runs as root
  TempDir dir;
  const std::string kits = dir / "pki/kits";
  const ProcessResult r = Certs({"--kits", "--out", dir / "pki", "--hosts",
                                 "127.0.0.1", "--clients", "1", "--owner",
                                 "10001:10002"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> paths = {kits};
  for (const auto& e : fs::recursive_directory_iterator(kits))
    paths.push_back(e.path().string());
  CHECK(paths.size() == 1 + 2 + 7 + 6);
  for (const std::string& p : paths) {
    INFO(p);
    struct stat st {};
    REQUIRE(::stat(p.c_str(), &st) == 0);
    CHECK(st.st_uid == 10001u);
    CHECK(st.st_gid == 10002u);
  }
}

// Kills the process groups it started unless they were waited for, so a
// failed REQUIRE leaves nothing running.
class Processes {
 public:
  ~Processes() {
    for (int pid : pids_) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  int Start(const std::vector<std::string>& argv, const std::string& log) {
    const int pid = testing::Spawn(argv, log);
    pids_.insert(pid);
    return pid;
  }
  // Its exit code (-1: killed after `timeout_s`).
  int Wait(int pid, double timeout_s) {
    pids_.erase(pid);
    return testing::WaitFor(pid, timeout_s);
  }

 private:
  std::set<int> pids_;
};

// A kit's start.sh as a user runs it, with the binaries of this build
// (SHEFL_BIN) and `env` ("NAME=VALUE") besides, and `args` passed on.
std::vector<std::string> StartScript(const std::string& kit,
                                     const std::vector<std::string>& env,
                                     const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "SHEFL_BIN=" + BinDir()};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(kit + "/start.sh");
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// shefl-client with kit `kit`'s certificate and key, `token_file`, as
// daemon `name` hosting `clients`: a daemon that is not who it claims.
ProcessResult Impostor(const std::string& kit, const std::string& token_file,
                       int port, const std::string& name,
                       const std::string& clients, const std::string& out) {
  return RunProcess(
      {BinDir() + "/shefl-client", "--coordinator",
       "127.0.0.1:" + std::to_string(port), "--name", name, "--clients",
       clients, "--threads", "1", "--out", out, "--tls-ca", kit + "/ca.pem",
       "--tls-cert", kit + "/client.pem", "--tls-key", kit + "/client.key",
       "--token-file", token_file},
      60);
}

TEST_CASE("a run started from the kits' start.sh alone finishes under mutual "
          "TLS, and one daemon's kit cannot take another's clients",
          "[certs][kits]") {
  TempDir dir;
  const std::string pki = dir / "pki", kits = pki + "/kits";
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  const int port = testing::FreePort();
  const ProcessResult made =
      Certs({"--kits", "--out", pki, "--hosts", "127.0.0.1", "--clients", "2",
             "--port", std::to_string(port), "--config", dir / "c.yaml"});
  INFO(made.output);
  REQUIRE(made.exit_code == 0);
  CHECK(ReadFile(kits + "/coordinator/config.yaml") == ReadFile(dir / "c.yaml"));
  // 8 clients dealt out in turn, as `shefl run` does.
  CHECK(absl::StrContains(ReadFile(kits + "/client-1/start.sh"), "'1-7/2'"));

  Processes procs;
  const std::string log = dir / "coordinator.log";
  const int coordinator = procs.Start(
      StartScript(kits + "/coordinator",
                  {"SHEFL_LISTEN=127.0.0.1:" + std::to_string(port)},
                  {"--threads", "1"}),
      log);
  const int daemon0 = procs.Start(
      StartScript(kits + "/client-0", {}, {"--threads", "1"}), dir / "d0.log");
  REQUIRE(testing::WaitUntil(
      [&] { return absl::StrContains(ReadFile(log), "registered daemon 'client-0'"); },
      120));
  CHECK(absl::StrContains(ReadFile(log), "(mutual TLS)"));

  // client-1's certificate, key and token, claiming client-0's client 0:
  // client ids belong to the certificate that registered them.
  const ProcessResult thief = Impostor(kits + "/client-1",
                                       kits + "/client-1/client.token", port,
                                       "intruder", "0", dir / "intruder");
  INFO(thief.output);
  CHECK(thief.exit_code == 1);
  CHECK(absl::StrContains(thief.output, "client 0 belongs to another identity"));
  // A kit's certificate without its token.
  testing::WriteFile(dir / "wrong.token", "0123456789abcdef0123456789abcdef\n");
  const ProcessResult tokenless = Impostor(
      kits + "/client-1", dir / "wrong.token", port, "client-1", "1", dir / "t");
  INFO(tokenless.output);
  CHECK(tokenless.exit_code == 1);
  CHECK(absl::StrContains(tokenless.output, "wrong or missing token"));

  const int daemon1 = procs.Start(
      StartScript(kits + "/client-1", {}, {"--threads", "1"}), dir / "d1.log");
  const int rc = procs.Wait(coordinator, 300);
  INFO(ReadFile(log));
  REQUIRE(rc == 0);
  CHECK(procs.Wait(daemon0, 60) == 0);
  CHECK(procs.Wait(daemon1, 60) == 0);
  const std::string run = kits + "/coordinator/run";
  const auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  CHECK(summary["rounds"] == 3);
  CHECK(testing::ReadJsonl(run + "/rounds.jsonl").size() == 3);
  for (const char* d : {"client-0", "client-1"})
    CHECK(fs::exists(kits + "/" + d + "/out/" + d + ".jsonl"));
}

TEST_CASE("shefl certs --kits refuses existing kits without --force and names "
          "the flag of bad input", "[certs][kits]") {
  TempDir dir;
  const std::string pki = dir / "pki";
  const std::vector<std::string> base = {"--kits", "--out", pki, "--hosts",
                                         "127.0.0.1"};
  REQUIRE(Certs(base).exit_code == 0);
  const std::string ca = ReadFile(pki + "/kits/client-0/ca.pem");

  const ProcessResult again = Certs(base);
  CHECK(again.exit_code == 1);
  CHECK(absl::StrContains(again.output, pki + "/kits exists"));
  CHECK(absl::StrContains(again.output, "--force"));
  CHECK(ReadFile(pki + "/kits/client-0/ca.pem") == ca);

  std::vector<std::string> forced = base;
  forced.push_back("--force");
  REQUIRE(Certs(forced).exit_code == 0);
  CHECK(ReadFile(pki + "/kits/client-0/ca.pem") != ca);
  CHECK(ReadFile(pki + "/kits/client-0/ca.pem") == ReadFile(pki + "/ca.pem"));

  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());  // 8 clients
  const std::string fresh = dir / "fresh";
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--port", "50051"}, "--port is for start kits: add --kits"},
      {{"--kits", "--port", "0"}, "--port '0'"},
      {{"--kits", "--clients", "0"}, "--clients 0"},
      {{"--kits", "--daemon-clients", "0-7"}, "--daemon-clients: 1 given for --clients 2"},
      {{"--kits", "--daemon-clients", "0-4", "--daemon-clients", "4-7",
        "--config", dir / "c.yaml"},
       "--daemon-clients: client 4 is given to client-0 and to client-1"},
      {{"--kits", "--daemon-clients", "0-3", "--daemon-clients", "4-6",
        "--config", dir / "c.yaml"},
       "--daemon-clients leaves 1 of the config's 8 clients"},
      {{"--kits", "--daemon-clients", "0-3", "--daemon-clients", "4-x"},
       "--daemon-clients '4-x'"},
      {{"--kits", "--config", dir / "missing.yaml"}, "--config " + dir / "missing.yaml"},
      {{"--kits", "--clients", "9", "--config", dir / "c.yaml"}, "--clients 9"},
  };
  for (const auto& [flags, message] : bad) {
    std::vector<std::string> args = {"--out", fresh, "--hosts", "127.0.0.1"};
    args.insert(args.end(), flags.begin(), flags.end());
    const ProcessResult r = Certs(args);
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(absl::StrContains(r.output, message));
    CHECK_FALSE(fs::exists(fresh));  // refused before anything is written
  }
}

TEST_CASE("start.sh says where it looked for a binary it cannot find, and "
          "asks for what the kit lacks", "[certs][kits]") {
  TempDir dir;
  const std::string pki = dir / "pki";
  REQUIRE(Certs({"--kits", "--out", pki, "--hosts", "127.0.0.1", "--clients",
                 "1"})
              .exit_code == 0);
  const std::string daemon = pki + "/kits/client-0/start.sh";
  for (const std::string& bin :
       std::vector<std::string>{"", "SHEFL_BIN=" + dir.path()}) {
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "PATH=/usr/bin:/bin"};
    if (!bin.empty()) argv.push_back(bin);
    argv.push_back(daemon);
    const ProcessResult r = RunProcess(argv, 30);
    INFO(r.output);
    CHECK(r.exit_code == 127);
    CHECK(absl::StrContains(r.output, "shefl-client is neither in SHEFL_BIN"));
    CHECK(absl::StrContains(r.output, "nor on PATH"));
  }
  // Neither --config nor --daemon-clients: start.sh asks for them.
  const ProcessResult d =
      RunProcess(StartScript(pki + "/kits/client-0", {}, {}), 30);
  CHECK(d.exit_code == 2);
  CHECK(absl::StrContains(d.output, "start.sh --clients RANGES"));
  const ProcessResult c =
      RunProcess(StartScript(pki + "/kits/coordinator", {}, {}), 30);
  CHECK(c.exit_code == 2);
  CHECK(absl::StrContains(c.output, "start.sh --config FILE"));
}

}  // namespace
}  // namespace shefl
