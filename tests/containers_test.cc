// The compose testbed for real, with Debian's podman (docs/DEPLOYMENT.md):
// the fast image (docker/Dockerfile.prebuilt around this build's binaries) is
// built, `podman-compose up` runs deploy/compose/docker-compose.yml in the
// local profile (coordinator, two CPU daemons, Prometheus, Grafana's
// stand-in) on a small synthetic run, and the test checks what a user would:
// rounds on the results volume whose byte books equal the daemons' own,
// Prometheus inside the testbed answering shefl_round >= 2, and a run that
// finishes after one daemon container is killed. Everything the test made
// (containers, network, volumes, its image) goes on every exit path; the
// base, Prometheus and Grafana stand-in images of deploy/containers/ setup.sh
// stay for the next run. Needs root (rootful podman), as CI has.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tests/shell_support.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

namespace fs = std::filesystem;
using testing::ReadFile;
using testing::ReadJsonl;
using testing::RunProcess;
using testing::Sh;
using testing::TempDir;
using testing::WaitUntil;
using testing::WriteFile;

const std::string kSource = SHEFL_SOURCE_DIR;

// The text of a Dockerfile's runtime stage up to its first COPY.
std::string RuntimeStage(const std::string& path) {
  const std::string text = ReadFile(path);
  const size_t from = text.find("AS runtime");
  const size_t to = text.find("\nCOPY", from);
  REQUIRE(from != std::string::npos);
  REQUIRE(to != std::string::npos);
  return text.substr(from, to - from);
}

TEST_CASE("Dockerfile.prebuilt's runtime stage is docker/Dockerfile's") {
  const std::string full = RuntimeStage(kSource + "/docker/Dockerfile");
  CHECK(full.find("RUNTIME_PACKAGES") != std::string::npos);
  CHECK(RuntimeStage(kSource + "/docker/Dockerfile.prebuilt") == full);
}

// Removes everything of one compose project and the image the test built,
// when the test ends however it ends; Teardown() can also be called early.
class Testbed {
 public:
  Testbed(std::string project, std::string compose, std::string image)
      : project_(std::move(project)), compose_(std::move(compose)),
        image_(std::move(image)) {}
  ~Testbed() { Teardown(); }
  void set_up_pid(int pid) { up_pid_ = pid; }
  void Teardown() {
    if (up_pid_ > 0) {  // podman-compose up in the foreground
      ::kill(-up_pid_, SIGKILL);
      testing::WaitFor(up_pid_, 10);
      up_pid_ = -1;
    }
    const std::string label = "--filter label=io.podman.compose.project=" + project_;
    Sh("podman-compose -p " + project_ + " -f " + compose_ + " down -v", 180);
    // What down leaves if podman-compose itself failed half-way.
    Sh("podman ps -aq " + label + " | xargs -r podman rm -f -t 1", 120);
    Sh("podman network ls -q " + label + " | xargs -r podman network rm -f", 60);
    Sh("podman volume ls -q " + label + " | xargs -r podman volume rm -f", 60);
    Sh("podman network rm -f " + project_ + "_shefl; podman volume rm -f " + project_ +
           "_results " + project_ + "_prometheus; podman rmi -f " + image_,
       120);
  }
  // Whatever of the project is still there (empty once torn down).
  std::string Leftovers() const {
    const std::string label = "--filter label=io.podman.compose.project=" + project_;
    return Sh("podman ps -aq " + label + "; podman network ls -q " + label +
                  "; podman volume ls -q " + label + "; podman image ls -q " + image_,
              60)
        .output;
  }

 private:
  std::string project_, compose_, image_;
  int up_pid_ = -1;
};

// Every byte a books line (rounds.jsonl or daemons/<name>.jsonl) counts for
// the daemons, per field: each client's and the daemons' own.
std::map<std::string, uint64_t> Books(const nlohmann::json& line) {
  std::map<std::string, uint64_t> out;
  for (const auto& [field, v] : line["daemon_bytes"].items())
    if (v.is_number_unsigned()) out["daemon." + field] += v.get<uint64_t>();
  for (const auto& [client, c] : line["bytes_by_client"].items())
    for (const auto& [field, v] : c.items())
      if (v.is_number_unsigned()) out[client + "." + field] += v.get<uint64_t>();
  return out;
}

TEST_CASE("podman-compose runs the testbed: rounds with exact books, Prometheus, a daemon killed") {
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(::geteuid() == 0);  // rootful podman; CI runs as root
  // Engine, containers.conf, base, Prometheus and Grafana stand-in images
  // (quick when they are there already).
  auto setup = Sh(kSource + "/deploy/containers/setup.sh --no-testbed 2>&1", 900);
  INFO(setup.output);
  REQUIRE(setup.exit_code == 0);

  const std::string id = std::to_string(::getpid());
  const std::string project = "shefltest" + id;
  const std::string image = "localhost/shefl-test-" + id + ":latest";
  TempDir dir;
  const std::string compose_dir = dir / "deploy/compose";
  const std::string compose = compose_dir + "/docker-compose.yml";
  Testbed bed(project, compose, image);

  const auto t_build = std::chrono::steady_clock::now();
  auto build = Sh(kSource + "/deploy/containers/build-image.sh --prebuilt " +
                      testing::BinDir() + " --tag " + image + " 2>&1",
                  600);
  INFO(build.output);
  REQUIRE(build.exit_code == 0);
  const double build_s = testing::SecondsSince(t_build);

  // The compose file as it is, beside copies of what it mounts, its own
  // certificates and the local profile with this test's image and ports.
  fs::create_directories(compose_dir);
  fs::copy_file(kSource + "/deploy/compose/docker-compose.yml", compose);
  for (const char* d : {"prometheus", "grafana"})
    fs::copy(kSource + "/deploy/" + d, dir / std::string("deploy/") + d,
             fs::copy_options::recursive);
  auto certs = RunProcess({testing::BinDir() + "/shefl", "certs", "--out", compose_dir + "/pki",
                           "--hosts", "coordinator", "--clients", "2", "--owner", "10001"},
                          60);
  INFO(certs.output);
  REQUIRE(certs.exit_code == 0);
  std::string config = testing::SyntheticConfig();
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"rounds: 3", "rounds: 15"},
           {"round_deadline_s: 60", "round_deadline_s: 10"},
           {"num_clients: 8", "num_clients: 20"},  // two daemons of auto:10
           {"num_hpc: 4", "num_hpc: 10"},
           // Rounds go on with one daemon's clients (the default quorum:
           // half of N) once the other has been gone 15 s (podman kill
           // counts as stopped by the user: no restart).
           {"per_round_lpc: 3", "per_round_lpc: 3\n  lost_after_s: 15"}}) {
    const size_t at = config.find(from);
    REQUIRE(at != std::string::npos);
    config.replace(at, from.size(), to);
  }
  WriteFile(dir / "config.yaml", config);
  const int prometheus_port = testing::FreePort();
  WriteFile(compose_dir + "/.env",
            "SHEFL_IMAGE=" + image +
                "\nSHEFL_PROMETHEUS_IMAGE=localhost/shefl-prometheus:latest"
                "\nSHEFL_GRAFANA_IMAGE=localhost/shefl-grafana-skipped:latest"
                "\nSHEFL_GRAFANA_RESTART=no\nSHEFL_GPU_DAEMONS=0"
                "\nSHEFL_CONFIG=" + dir / "config.yaml" +
                "\nSHEFL_COORDINATOR_PORT=" + std::to_string(testing::FreePort()) +
                "\nSHEFL_METRICS_PORT=" + std::to_string(testing::FreePort()) +
                "\nSHEFL_PROMETHEUS_PORT=" + std::to_string(prometheus_port) +
                "\nSHEFL_GRAFANA_PORT=" + std::to_string(testing::FreePort()) + "\n");

  const auto t_up = std::chrono::steady_clock::now();
  bed.set_up_pid(testing::Spawn(
      {"/usr/bin/podman-compose", "-p", project, "-f", compose, "up"}, dir / "up.log"));
  auto volume = Sh("podman volume inspect --format '{{.Mountpoint}}' " + project +
                       "_results 2>/dev/null",
                   30);
  REQUIRE(WaitUntil(
      [&] {
        volume = Sh("podman volume inspect --format '{{.Mountpoint}}' " + project +
                        "_results 2>/dev/null",
                    30);
        return volume.exit_code == 0;
      },
      120));
  const std::string run = volume.output.substr(0, volume.output.find('\n')) + "/run";
  INFO(ReadFile(dir / "up.log"));
  const auto rounds_done = [&](size_t n) {
    return WaitUntil([&] { return ReadJsonl(run + "/rounds.jsonl").size() >= n; }, 300);
  };
  REQUIRE(rounds_done(1));
  const double first_round_s = testing::SecondsSince(t_up);
  REQUIRE(rounds_done(2));
  // One daemon container killed: the run goes on to its last round.
  const size_t rounds_at_kill = ReadJsonl(run + "/rounds.jsonl").size();
  auto kill = Sh("podman kill " + project + "_daemon_2 2>&1", 60);
  INFO(kill.output);
  CHECK(kill.exit_code == 0);

  // Prometheus inside the testbed has scraped the coordinator's round.
  double prom_round = -1;
  WaitUntil(
      [&] {
        const auto reply = nlohmann::json::parse(
            testing::HttpGet(prometheus_port, "/api/v1/query?query=shefl_round"), nullptr,
            false);
        if (reply.is_discarded() || reply["data"]["result"].empty()) return false;
        prom_round = std::stod(reply["data"]["result"][0]["value"][1].get<std::string>());
        return prom_round >= 2;
      },
      90);
  CHECK(prom_round >= 2);

  REQUIRE(WaitUntil([&] { return fs::exists(run + "/summary.json"); }, 300));
  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  CHECK(rounds.size() == 15u);
  CHECK(rounds_at_kill < 15u);
  // The killed daemon's 10 clients are booked as lost, not back.
  const auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"), nullptr, false);
  REQUIRE(!summary.is_discarded());
  REQUIRE(summary["clients_lost"].size() == 1u);
  CHECK(summary["clients_lost"][0]["clients"].size() == 10u);
  CHECK(summary["clients_lost"][0]["back_round"].is_null());

  // The byte books, field by field. Each daemon writes its line for a
  // round when it learns the round ended, so the killed one may lack lines
  // for rounds the coordinator recorded: each client's figures in a
  // daemon's line equal the coordinator's for that round and client, and
  // in a round every daemon wrote, the daemons' figures summed are the
  // coordinator's whole books. Not compared: daemon.control_down (each
  // daemon books 9 bytes per round that the coordinator's daemon_bytes
  // never holds; wire_overhead_test compares upward only).
  std::map<int64_t, std::map<std::string, uint64_t>> daemons;
  std::map<int64_t, size_t> writers;  // round -> daemons with a line for it
  size_t daemon_files = 0;
  for (const auto& f : fs::directory_iterator(run + "/daemons")) {
    if (f.path().extension() != ".jsonl") continue;
    ++daemon_files;
    for (const auto& line : ReadJsonl(f.path())) {
      const int64_t round = line["round"].get<int64_t>();
      ++writers[round];
      for (const auto& [k, v] : Books(line)) daemons[round][k] += v;
    }
  }
  CHECK(daemon_files == 2u);
  int client_rounds = 0, whole_rounds = 0;
  for (const auto& r : rounds) {
    const int64_t round = r["round"].get<int64_t>();
    auto coordinator = Books(r);
    coordinator.erase("daemon.control_down");
    daemons[round].erase("daemon.control_down");
    const bool whole = writers[round] == daemon_files;
    std::string differ;
    for (const auto& [k, v] : daemons[round])
      if ((whole || k.rfind("daemon.", 0) != 0) && coordinator[k] != v)
        differ += k + ": coordinator " + std::to_string(coordinator[k]) + ", daemons " +
                  std::to_string(v) + "\n";
    if (whole)
      for (const auto& [k, v] : coordinator)
        if (!daemons[round].count(k) && v != 0) differ += k + ": only the coordinator's\n";
    INFO("round " << round << (whole ? " (every daemon)" : "") << "\n" << differ);
    CHECK(differ.empty());
    client_rounds += daemons[round].empty() ? 0 : 1;
    whole_rounds += whole ? 1 : 0;
  }
  CHECK(whole_rounds >= 1);     // round 1 at least: both ran it
  CHECK(client_rounds >= 12);   // the survivor's lines through the run
  std::printf("containers: books equal in %d rounds (%d with both daemons)\n",
              client_rounds, whole_rounds);

  const std::string up_log = ReadFile(dir / "up.log");
  CHECK(up_log.find("grafana: skipped") != std::string::npos);

  bed.Teardown();
  CHECK(bed.Leftovers().find_first_not_of(" \n") == std::string::npos);
  std::printf("containers: image built in %.1f s; up -> first round %.1f s; "
              "Prometheus shefl_round %.0f; test %.1f s\n",
              build_s, first_round_s, prom_round, testing::SecondsSince(t0));
}

}  // namespace
}  // namespace shefl
