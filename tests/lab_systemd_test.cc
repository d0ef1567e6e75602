// The lab for real (deploy/lab): three "machines" on this one, each a
// rootful podman container with systemd as PID 1 (deploy/containers/
// Dockerfile.lab-host: Debian 12, systemd, D-Bus, Python, nothing of
// shefl). The unchanged playbook (deploy/lab/ansible/site.yml) configures
// them through Ansible's containers.podman.podman connection: runtime
// packages and Fashion-MNIST from Debian's archive, the binaries, each
// host's own certificate and token, the units. systemd starts them; the run
// goes under mutual TLS, a Prometheus scrapes the three through their
// file_sd targets, `systemctl restart shefl-coordinator` mid-run resumes,
// `systemctl stop shefl-client` on one daemon host is survived, and the
// run finishes. Everything the test made (containers, network, files) goes
// on every exit path; the images of deploy/containers/setup.sh stay.
// Containers rather than network namespaces: each host needs its own PID 1
// systemd, /etc and package database, as a lab machine has.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/shell_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

namespace fs = std::filesystem;
using testing::ReadJsonl;
using testing::RunProcess;
using testing::Sh;
using testing::TempDir;
using testing::WaitUntil;
using testing::WriteFile;

const std::string kSource = SHEFL_SOURCE_DIR;
const char* kHostImage = "localhost/shefl-lab-host:latest";
const char* kPrometheusImage = "localhost/shefl-prometheus:latest";
const char* kRun = "/var/lib/shefl/results/run";

// The containers and network of one test run, found by their label and
// removed when the test ends however it ends.
class Lab {
 public:
  explicit Lab(std::string prefix) : prefix_(std::move(prefix)) {}
  ~Lab() { Teardown(); }
  const std::string& prefix() const { return prefix_; }
  std::string Label() const { return "shefl.lab-test=" + prefix_; }
  std::string Host(int i) const { return prefix_ + "-lab-" + std::to_string(i); }
  std::string Network() const { return prefix_ + "-net"; }

  void Teardown() {
    Sh("podman ps -aq --filter label=" + Label() + " | xargs -r podman rm -f -t 2", 180);
    Sh("podman network rm -f " + Network(), 60);
  }
  // What an earlier run left when it was killed (a ctest timeout sends
  // SIGKILL, which runs no destructor): every lab-test container and
  // network, whatever its run.
  static void SweepEarlierRuns() {
    Sh("podman ps -aq --filter label=shefl.lab-test | xargs -r podman rm -f -t 1", 180);
    Sh("podman network ls -q --filter label=shefl.lab-test | xargs -r podman network rm -f", 60);
  }
  std::string Leftovers() const {
    return Sh("podman ps -aq --filter label=" + Label() + "; podman network ls -q --filter name=^" +
                  Network() + "$",
              60)
        .output;
  }
  // Runs `cmd` on host i (a shell inside its container).
  testing::ProcessResult On(int i, const std::string& cmd, double timeout_s = 60) const {
    return RunProcess({"/usr/bin/podman", "exec", Host(i), "/bin/sh", "-c", cmd}, timeout_s);
  }

 private:
  std::string prefix_;
};

// The run's rounds.jsonl on the coordinator host (empty until round 1),
// through a copy here: ReadJsonl keeps only complete lines.
std::vector<nlohmann::json> Rounds(const Lab& lab) {
  TempDir dir;
  WriteFile(dir / "rounds.jsonl",
            lab.On(1, std::string("cat ") + kRun + "/rounds.jsonl 2>/dev/null").output);
  return ReadJsonl(dir / "rounds.jsonl");
}

// Fashion-MNIST (from the package the playbook installs), the CNN, rounds
// of a few seconds (long enough to restart the coordinator inside the
// run): 20 clients, 10 a host; rounds go on with one host's clients once
// the other is gone (the default quorum: half of N), after 15 s of silence
// (clients.lost_after_s; the default is 60).
std::string LabConfig() {
  return R"(name: lab
method: shefl
seed: 3
rounds: 16
round_deadline_s: 60
data:
  dataset: fmnist
partition:
  scheme: dirichlet
  alpha: 100
model:
  name: cnn
  num_models: 3
clients:
  num_clients: 20
  num_hpc: 10
  per_round_hpc: 2
  per_round_lpc: 2
  start_timeout_s: 20
  lost_after_s: 15
train:
  lr: 0.05
  local_steps: 60
  batch_size: 16
compression:
  density: 0.1
eval:
  every: 1
  max_test_samples: 2000
)";
}

std::string Inventory(const Lab& lab, const std::string& pki, const std::string& config) {
  return "[coordinator]\nlab-1 ansible_host=" + lab.Host(1) +
         "\n\n[daemons]\n"
         "lab-2 ansible_host=" + lab.Host(2) +
         " shefl_clients=0-9 shefl_device=auto shefl_client_cert=client-0\n"
         "lab-3 ansible_host=" + lab.Host(3) +
         " shefl_clients=10-19 shefl_device=auto shefl_client_cert=client-1\n\n"
         "[all:vars]\nansible_connection=containers.podman.podman\n"
         "ansible_python_interpreter=/usr/bin/python3\n"
         "shefl_bin_dir=" + testing::BinDir() + "\nshefl_pki_dir=" + pki +
         "\nshefl_config=" + config + "\nshefl_coordinator=lab-1:50051\n";
}

// "198.19.128.0/24" -> "198.19.128." (the pools of deploy/containers/
// containers.conf hand out /24s).
std::string SubnetPrefix(const std::string& inspect) {
  const size_t slash = inspect.find('/');
  REQUIRE(slash != std::string::npos);
  const std::string net = inspect.substr(0, slash);
  REQUIRE(net.size() > 2);
  REQUIRE(net.substr(net.size() - 2) == ".0");
  return net.substr(0, net.size() - 1);
}

// Number of Prometheus targets up, by job, through its HTTP API.
std::multiset<std::string> UpTargets(int port) {
  std::multiset<std::string> up;
  const auto reply =
      nlohmann::json::parse(testing::HttpGet(port, "/api/v1/targets?state=active"), nullptr,
                            false);
  if (reply.is_discarded() || !reply.contains("data")) return up;
  for (const auto& t : reply["data"]["activeTargets"])
    if (t.value("health", "") == "up")
      up.insert(t["labels"].value("job", "") + " " + t["labels"].value("instance", ""));
  return up;
}

TEST_CASE("the playbook installs the lab on three systemd hosts: a run that survives a restart and a stopped daemon") {
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(::geteuid() == 0);  // rootful podman; CI runs as root
  auto setup = Sh(kSource + "/deploy/containers/setup.sh --no-testbed 2>&1", 900);
  if (setup.exit_code != 0) FAIL("setup failed (" << setup.exit_code << "):\n" << setup.output);
  auto image = Sh("podman build -q -f " + kSource + "/deploy/containers/Dockerfile.lab-host -t " +
                      kHostImage + " " + kSource + "/deploy/containers 2>&1",
                  600);
  if (image.exit_code != 0) FAIL("image failed (" << image.exit_code << "):\n" << image.output);

  Lab::SweepEarlierRuns();
  Lab lab("shefllab" + std::to_string(::getpid()));
  TempDir dir;
  REQUIRE(Sh("podman network create --label " + lab.Label() + " " + lab.Network(), 60)
              .exit_code == 0);
  auto subnet = Sh("podman network inspect " + lab.Network() +
                       " --format '{{range .Subnets}}{{.Subnet}}{{end}}'",
                   30);
  REQUIRE(subnet.exit_code == 0);
  const std::string net = SubnetPrefix(subnet.output);
  std::string hosts;  // every host knows the others by name, as DNS would
  for (int i = 1; i <= 3; ++i)
    hosts += " --add-host lab-" + std::to_string(i) + ":" + net + std::to_string(10 + i);

  const auto t_boot = std::chrono::steady_clock::now();
  for (int i = 1; i <= 3; ++i) {
    auto run = Sh("podman run -d --systemd=always --label " + lab.Label() + " --name " +
                      lab.Host(i) + " --hostname lab-" + std::to_string(i) + " --network " +
                      lab.Network() + " --ip " + net + std::to_string(10 + i) + hosts + " " +
                      kHostImage + " 2>&1",
                  120);
    INFO(run.output);
    REQUIRE(run.exit_code == 0);
  }
  for (int i = 1; i <= 3; ++i) {
    std::string state;
    const bool up = WaitUntil(
        [&] {
          state = lab.On(i, "systemctl is-system-running", 10).output;
          return state.rfind("running", 0) == 0 || state.rfind("degraded", 0) == 0;
        },
        90);
    INFO("lab-" << i << ": " << state << lab.On(i, "systemctl --failed --no-legend").output);
    REQUIRE(up);
  }
  const double boot_s = testing::SecondsSince(t_boot);

  // Each daemon host its own certificate and token; ca.key stays here.
  const std::string pki = dir / "pki";
  {
    auto certs = RunProcess({testing::BinDir() + "/shefl", "certs", "--out", pki, "--hosts",
                             "lab-1", "--clients", "2"},
                            60);
    INFO(certs.output);
    REQUIRE(certs.exit_code == 0);
  }
  WriteFile(dir / "config.yaml", LabConfig());
  WriteFile(dir / "inventory.ini", Inventory(lab, pki, dir / "config.yaml"));

  const auto t_play = std::chrono::steady_clock::now();
  auto play = RunProcess({"/usr/bin/env", "ANSIBLE_NOCOLOR=1", "ANSIBLE_HOST_KEY_CHECKING=0",
                          "ansible-playbook", "-i", dir / "inventory.ini",
                          kSource + "/deploy/lab/ansible/site.yml"},
                         900);
  if (play.exit_code != 0) FAIL("play failed (" << play.exit_code << "):\n" << play.output);
  const double play_s = testing::SecondsSince(t_play);

  // Secrets where they went: the service's group reads them, nobody else
  // does, and no host has the CA's key.
  for (int i = 1; i <= 3; ++i) {
    const auto files = lab.On(i, "stat -c '%n %U:%G %a' /etc/shefl/pki/*; ls /etc/shefl/pki");
    INFO("lab-" << i << "\n" << files.output);
    CHECK(files.output.find("ca.key") == std::string::npos);
    const std::string key = i == 1 ? "/etc/shefl/pki/server.key root:shefl 640"
                                   : "/etc/shefl/pki/client.key root:shefl 640";
    CHECK(files.output.find(key) != std::string::npos);
  }
  CHECK(lab.On(2, "cat /etc/shefl/pki/client.token").output ==
        testing::ReadFile(pki + "/client-0.token"));

  // Prometheus on the lab network, its config the repository's own, the
  // three hosts in its file_sd targets.
  const std::string prom = dir / "prometheus";
  fs::copy(kSource + "/deploy/prometheus", prom, fs::copy_options::recursive);
  WriteFile(prom + "/targets/coordinator.json", R"([{"targets": ["lab-1:9100"]}])");
  WriteFile(prom + "/targets/daemons.json", R"([{"targets": ["lab-2:9101", "lab-3:9101"]}])");
  REQUIRE(Sh("chmod -R a+rX " + prom, 10).exit_code == 0);
  const int prom_port = testing::FreePort();
  auto prom_run = Sh("podman run -d --label " + lab.Label() + " --name " + lab.prefix() +
                         "-prometheus --network " + lab.Network() + hosts + " -p 127.0.0.1:" +
                         std::to_string(prom_port) + ":9090 -v " + prom +
                         ":/etc/prometheus:ro " + kPrometheusImage + " 2>&1",
                     120);
  if (prom_run.exit_code != 0)
    FAIL("prom_run failed (" << prom_run.exit_code << "):\n" << prom_run.output);

  const auto rounds_at_least = [&](size_t n, double timeout_s) {
    return WaitUntil([&] { return Rounds(lab).size() >= n; }, timeout_s);
  };
  const auto journal = [&](int i, const std::string& unit) {
    return lab.On(i, "journalctl --no-pager -o cat -u " + unit, 60).output;
  };
  const auto logs = [&] {
    return "coordinator:\n" + journal(1, "shefl-coordinator") + "\nlab-2's daemon:\n" +
           journal(2, "shefl-client") + "\nlab-3's daemon:\n" + journal(3, "shefl-client");
  };
  if (!rounds_at_least(1, 300)) FAIL("no round within 300 s\n" << logs());
  const double first_round_s = testing::SecondsSince(t_play);

  std::multiset<std::string> up;
  const bool scraped = WaitUntil(
      [&] {
        up = UpTargets(prom_port);
        return up.size() >= 3;
      },
      120);
  std::string up_list;
  for (const auto& t : up) up_list += t + "\n";
  INFO("targets up:\n" << up_list);
  CHECK(scraped);
  CHECK(up.count("shefl-coordinator lab-1:9100") == 1);
  CHECK(up.count("shefl-daemons lab-2:9101") == 1);
  CHECK(up.count("shefl-daemons lab-3:9101") == 1);

  // A restart mid-run resumes the run (--continue, same config).
  REQUIRE(rounds_at_least(2, 300));
  const size_t at_restart = Rounds(lab).size();
  auto restart = lab.On(1, "systemctl restart shefl-coordinator", 120);
  INFO(restart.output);
  CHECK(restart.exit_code == 0);
  if (!rounds_at_least(at_restart + 2, 300)) FAIL("no round after the restart\n" << logs());
  const std::string coord_log = journal(1, "shefl-coordinator");
  CHECK(testing::ResumedAfter(coord_log) >= static_cast<int>(at_restart));

  // One daemon host's service stopped (no restart: systemd restarts only
  // what fails): the run goes on with the other's clients. Started again,
  // it rejoins with its clients.
  const size_t at_stop = Rounds(lab).size();
  auto stop = lab.On(3, "systemctl stop shefl-client", 120);
  INFO(stop.output);
  CHECK(stop.exit_code == 0);
  CHECK(lab.On(3, "systemctl is-active shefl-client").output.rfind("inactive", 0) == 0);
  // A round that went on without it (it is lost once gone 15 s; starting
  // it sooner would be a restart, not a loss).
  const int64_t stop_round = Rounds(lab).back()["round"].get<int64_t>();
  const auto without = [&] {
    for (const auto& r : Rounds(lab))
      if (r["round"].get<int64_t>() > stop_round && r.contains("daemons_missing") &&
          r["daemons_missing"] == nlohmann::json::array({"lab-3"}))
        return true;
    return false;
  };
  if (!WaitUntil(without, 300)) FAIL("no round without lab-3\n" << logs());
  CHECK(lab.On(3, "systemctl start shefl-client", 120).exit_code == 0);
  const auto back = [&] {
    const auto rs = Rounds(lab);
    return rs.size() > at_stop + 2 && rs.back()["clients_missing"] == 0;
  };
  if (!WaitUntil(back, 300)) FAIL("lab-3 did not rejoin\n" << logs());

  // Then a host's container stopped outright (no goodbye on its
  // connections: keepalive finds it): the run goes on with lab-3's clients.
  const size_t at_kill = Rounds(lab).size();
  CHECK(Sh("podman kill " + lab.Host(2) + " 2>&1", 60).exit_code == 0);
  // summary.json alone says nothing: a stopped coordinator writes one too.
  const bool finished = rounds_at_least(16, 600);
  if (!finished) FAIL("the run did not finish\n" << journal(1, "shefl-coordinator"));

  const auto rounds = Rounds(lab);
  std::set<int64_t> numbers;
  for (const auto& r : rounds) numbers.insert(r["round"].get<int64_t>());
  CHECK(rounds.size() == 16u);
  CHECK(numbers.size() == 16u);
  CHECK(*numbers.rbegin() == 16);
  CHECK(at_kill < 16u);
  const auto summary = nlohmann::json::parse(
      lab.On(1, std::string("cat ") + kRun + "/summary.json").output, nullptr, false);
  REQUIRE(!summary.is_discarded());
  INFO(summary.dump());
  INFO("coordinator:\n" << journal(1, "shefl-coordinator"));
  CHECK(summary.value("rounds", 0) == 16);
  // Both losses booked: lab-3 back, lab-2 not.
  const auto& lost = summary["clients_lost"];
  REQUIRE(lost.size() == 2);
  CHECK(lost[0]["daemon"] == "lab-3");
  CHECK(lost[0]["back_round"].is_number());
  CHECK(lost[1]["daemon"] == "lab-2");
  CHECK(lost[1]["back_round"].is_null());
  CHECK(lost[1]["clients"].size() == 10u);
  CHECK(rounds.back()["daemons_missing"] == nlohmann::json::array({"lab-2"}));
  // The coordinator ended the run by itself (exit 0: no restart by
  // systemd), and the surviving daemon with it.
  CHECK(WaitUntil(
      [&] {
        return lab.On(1, "systemctl is-active shefl-coordinator").output.rfind("inactive", 0) ==
               0;
      },
      120));
  CHECK(lab.On(1, "systemctl show -p Result --value shefl-coordinator").output == "success\n");
  CHECK(lab.On(1, "systemctl show -p NRestarts --value shefl-coordinator").output == "0\n");
  // Files of the run belong to the service's user.
  CHECK(lab.On(1, std::string("stat -c %U ") + kRun + "/rounds.jsonl").output == "shefl\n");

  lab.Teardown();
  CHECK(lab.Leftovers().find_first_not_of(" \n") == std::string::npos);
  std::printf(
      "lab: hosts up in %.1f s; playbook %.1f s; playbook start -> first round %.1f s; "
      "resumed after round %d; test %.1f s\n",
      boot_s, play_s, first_round_s, testing::ResumedAfter(coord_log), testing::SecondsSince(t0));
}

}  // namespace
}  // namespace shefl
