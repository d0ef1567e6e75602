// deploy/prometheus/ checked by Debian's promtool (package prometheus):
// the scrape config and rule files are valid, every alert's unit test in
// deploy/prometheus/tests passes, and every shefl metric a rule reads is
// one the binaries export (a renamed metric would leave an alert that can
// never fire). The compose scrape finds every compose service that serves
// /metrics, and the Kubernetes scrape config (prometheus-k8s.yml) gives
// deploy/k8s's pods the job names the alerts match.
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::RunProcess;

const std::string kDir = std::string(SHEFL_SOURCE_DIR) + "/deploy/prometheus";

testing::ProcessResult Promtool(const std::vector<std::string>& args) {
  REQUIRE(std::filesystem::exists("/usr/bin/promtool"));  // scripts/setup.sh installs it
  std::vector<std::string> argv = {"/usr/bin/promtool"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, 120);
}

TEST_CASE("promtool accepts the scrape config and the rule files") {
  auto config = Promtool({"check", "config", kDir + "/prometheus.yml"});
  INFO(config.output);
  CHECK(config.exit_code == 0);
  CHECK_THAT(config.output, Catch::Contains("2 rule files found"));
  auto rules = Promtool({"check", "rules", kDir + "/rules/shefl-recording.yml",
                         kDir + "/rules/shefl-alerts.yml"});
  INFO(rules.output);
  CHECK(rules.exit_code == 0);
  CHECK_THAT(rules.output, Catch::Contains("9 rules found"));
}

TEST_CASE("every alert's promtool unit test passes") {
  auto r = Promtool({"test", "rules", kDir + "/tests/alerts.test.yml"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("SUCCESS"));
  // Each alert of the rule file has a test group.
  const std::string alerts = testing::ReadFile(kDir + "/rules/shefl-alerts.yml");
  const std::string tests = testing::ReadFile(kDir + "/tests/alerts.test.yml");
  std::regex name("alert: (\\w+)");
  int n = 0;
  for (std::sregex_iterator it(alerts.begin(), alerts.end(), name), end; it != end; ++it) {
    INFO("alert " << (*it)[1]);
    CHECK(tests.find("alertname: " + (*it)[1].str()) != std::string::npos);
    ++n;
  }
  CHECK(n == 9);
}

// The .cc files of `dir` and its subfolders (server/'s rooms), as one text.
std::string Sources(const std::string& dir) {
  std::string all;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.path().extension() == ".cc") all += testing::ReadFile(e.path().string());
  return all;
}

TEST_CASE("the rules read only metrics the binaries export") {
  const std::string code = Sources(std::string(SHEFL_SOURCE_DIR) + "/server") +
                           Sources(std::string(SHEFL_SOURCE_DIR) + "/client");
  std::set<std::string> used;
  for (const char* f : {"/rules/shefl-recording.yml", "/rules/shefl-alerts.yml"}) {
    const std::string text = testing::ReadFile(kDir + f);
    std::regex metric("\\bshefl_[a-z_]+");
    for (std::sregex_iterator it(text.begin(), text.end(), metric), end; it != end; ++it)
      used.insert(std::regex_replace(it->str(), std::regex("_(sum|count|bucket)$"), ""));
  }
  CHECK(used.size() >= 8u);
  for (const std::string& m : used) {
    INFO(m);
    CHECK(code.find("\"" + m + "\"") != std::string::npos);
  }
}

// The job names the alert rules match (`job="..."`).
std::set<std::string> AlertJobs() {
  const std::string alerts = testing::ReadFile(kDir + "/rules/shefl-alerts.yml");
  std::set<std::string> jobs;
  std::regex job("job=\"([a-z-]+)\"");
  for (std::sregex_iterator it(alerts.begin(), alerts.end(), job), end; it != end; ++it)
    jobs.insert((*it)[1]);
  return jobs;
}

TEST_CASE("the compose scrape finds every compose service that serves /metrics") {
  const YAML::Node compose =
      YAML::LoadFile(std::string(SHEFL_SOURCE_DIR) + "/deploy/compose/docker-compose.yml");
  const YAML::Node prom = YAML::LoadFile(kDir + "/prometheus.yml");
  std::map<std::string, std::string> job_of;  // DNS name -> job
  for (const auto& job : prom["scrape_configs"])
    for (const auto& sd : job["dns_sd_configs"])
      for (const auto& name : sd["names"])
        job_of[name.as<std::string>()] = job["job_name"].as<std::string>();
  int serving = 0;
  for (const auto& svc : compose["services"]) {
    std::string command;
    for (const auto& part : svc.second["command"]) command += part.as<std::string>() + " ";
    if (command.find("--metrics-listen") == std::string::npos) continue;
    ++serving;
    const std::string name = svc.first.as<std::string>();
    INFO("compose service " << name);
    REQUIRE(job_of.count(name) == 1);
    CHECK(job_of[name] == (name == "coordinator" ? "shefl-coordinator" : "shefl-daemons"));
  }
  CHECK(serving == 3);  // coordinator, daemon, daemon-gpu
  for (const std::string& job : AlertJobs()) {
    bool scraped = false;
    for (const auto& [name, j] : job_of) scraped = scraped || j == job;
    INFO(job);
    CHECK(scraped);
  }
}

// Prometheus label names as Kubernetes discovery writes them.
std::string Sanitized(std::string name) {
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return name;
}

// Debian's Prometheus is built without Kubernetes discovery, so the
// relabelling of prometheus-k8s.yml is fed by file discovery with the
// labels Kubernetes discovery gives each port of deploy/k8s's rendered
// pods (and of a pod that is not shefl's); a real Prometheus then shows
// which targets it keeps and under which job.
TEST_CASE("on Kubernetes the scrape config names the jobs the alerts match") {
  REQUIRE(std::filesystem::exists("/usr/bin/prometheus"));  // scripts/setup.sh installs it
  const YAML::Node k8s = YAML::LoadFile(kDir + "/prometheus-k8s.yml");
  REQUIRE(k8s["scrape_configs"].size() == 1);
  YAML::Node job = k8s["scrape_configs"][0];
  REQUIRE(job["kubernetes_sd_configs"][0]["role"].as<std::string>() == "pod");
  auto rendered = RunProcess({"/bin/sh", "-c", "kubectl kustomize '" +
                                                   std::string(SHEFL_SOURCE_DIR) +
                                                   "/deploy/k8s' 2>&1"}, 120);
  INFO(rendered.output);
  REQUIRE(rendered.exit_code == 0);
  nlohmann::json groups = nlohmann::json::array();
  auto add_pod = [&](const YAML::Node& meta, const YAML::Node& containers,
                     const std::string& pod) {
    for (const auto& c : containers)
      for (const auto& port : c["ports"]) {
        nlohmann::json labels = {
            {"__meta_kubernetes_namespace", "default"},
            {"__meta_kubernetes_pod_name", pod},
            {"__meta_kubernetes_pod_container_port_name", port["name"].as<std::string>()}};
        for (const auto& kv : meta["labels"])
          labels["__meta_kubernetes_pod_label_" + Sanitized(kv.first.as<std::string>())] =
              kv.second.as<std::string>();
        for (const auto& kv : meta["annotations"])
          labels["__meta_kubernetes_pod_annotation_" +
                 Sanitized(kv.first.as<std::string>())] = kv.second.as<std::string>();
        groups.push_back(
            {{"targets", {"127.0.0.1:" + std::to_string(port["containerPort"].as<int>())}},
             {"labels", labels}});
      }
  };
  int sets = 0;
  for (const YAML::Node& d : YAML::LoadAll(rendered.output))
    if (d["kind"].as<std::string>() == "StatefulSet") {
      ++sets;
      add_pod(d["spec"]["template"]["metadata"], d["spec"]["template"]["spec"]["containers"],
              d["metadata"]["name"].as<std::string>() + "-0");
    }
  REQUIRE(sets == 2);
  // Another application's pod, scraped by its own annotations: not shefl's.
  add_pod(YAML::Load("{labels: {app.kubernetes.io/name: other}, annotations: "
                     "{prometheus.io/scrape: 'true'}}"),
          YAML::Load("[{ports: [{name: metrics, containerPort: 9999}]}]"), "other-0");

  testing::TempDir dir;
  testing::WriteFile(dir / "pods.json", groups.dump(1));
  job.remove("kubernetes_sd_configs");
  job["file_sd_configs"] = YAML::Load("[{files: ['" + dir / "pods.json" + "']}]");
  YAML::Node config = k8s;
  YAML::Node rules;
  for (const auto& f : k8s["rule_files"]) rules.push_back(kDir + "/" + f.as<std::string>());
  config["rule_files"] = rules;
  config["scrape_configs"][0] = job;
  YAML::Emitter out;
  out << config;
  testing::WriteFile(dir / "prometheus.yml", out.c_str());
  auto check = Promtool({"check", "config", dir / "prometheus.yml"});
  INFO(check.output);
  REQUIRE(check.exit_code == 0);

  const int port = testing::FreePort();
  const int pid = testing::Spawn({"/usr/bin/prometheus", "--config.file=" + dir / "prometheus.yml",
                                  "--storage.tsdb.path=" + dir / "tsdb",
                                  "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                                 dir / "prometheus.log");
  nlohmann::json targets;
  const bool listed = testing::WaitUntil([&] {
    int status = 0;
    const std::string body = testing::HttpGet(port, "/api/v1/targets", &status);
    if (status != 200) return false;
    targets = nlohmann::json::parse(body, nullptr, false);
    return targets.is_object() && targets["data"]["activeTargets"].size() >= 2;
  }, 60);
  ::kill(pid, SIGTERM);
  testing::WaitFor(pid, 30);
  INFO(testing::ReadFile(dir / "prometheus.log"));
  REQUIRE(listed);
  std::map<std::string, std::string> job_of_pod;
  for (const auto& t : targets["data"]["activeTargets"]) {
    INFO(t.dump());
    const std::string pod = t["labels"]["pod"];
    job_of_pod[pod] = t["labels"]["job"];
    CHECK(t["labels"]["namespace"] == "default");
    // Only the metrics port, at the annotated path.
    const std::string url = t["scrapeUrl"];
    CHECK_THAT(url, Catch::EndsWith(pod == "shefl-coordinator-0" ? ":9100/metrics"
                                                                 : ":9101/metrics"));
  }
  CHECK(targets["data"]["activeTargets"].size() == 2);
  CHECK(job_of_pod["shefl-coordinator-0"] == "shefl-coordinator");
  CHECK(job_of_pod["shefl-daemon-0"] == "shefl-daemons");
  CHECK(job_of_pod.count("other-0") == 0);
  std::set<std::string> jobs;
  for (const auto& [pod, j] : job_of_pod) jobs.insert(j);
  CHECK(AlertJobs() == jobs);
}

}  // namespace
}  // namespace shefl
