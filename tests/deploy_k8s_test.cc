// deploy/k8s rendered offline by `kubectl kustomize` (no cluster here), and
// the rendered manifests checked against each other and against the
// binaries: Services select the pods and name their ports, probes and
// scrape annotations point at the ports the commands listen on, the
// daemons dial the coordinator's Service, every flag is one the binaries
// document, the experiment ConfigMap is a config shefl accepts, the base
// requests no GPU and the GPU overlay does, and every image is one the
// docs say how to build and provide.
#include <yaml-cpp/yaml.h>

#include <map>
#include <regex>
#include <set>

#include "common/core/config.h"
#include "common/fed/config_load.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::BinDir;
using testing::RunProcess;

const std::string kK8s = std::string(SHEFL_SOURCE_DIR) + "/deploy/k8s";

std::vector<YAML::Node> Render(const std::string& dir) {
  auto r = RunProcess({"/bin/sh", "-c", "kubectl kustomize '" + dir + "' 2>&1"}, 120);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  return YAML::LoadAll(r.output);
}

YAML::Node Find(const std::vector<YAML::Node>& docs, const std::string& kind,
                const std::string& prefix) {
  for (const YAML::Node& d : docs)
    if (d["kind"].as<std::string>() == kind &&
        d["metadata"]["name"].as<std::string>().rfind(prefix, 0) == 0)
      return d;
  FAIL("no " << kind << " named " << prefix << "*");
  return {};
}

// The container's command as one line, and the port of `--flag HOST:PORT`.
std::string Command(const YAML::Node& c) {
  std::string all;
  for (const auto& part : c["command"]) all += part.as<std::string>() + " ";
  return all;
}
int PortOf(const std::string& command, const std::string& flag) {
  std::smatch m;
  REQUIRE(std::regex_search(command, m, std::regex(flag + " [^ :]*:(\\d+)")));
  return std::stoi(m[1]);
}
// Whether a container asks for a GPU (resources.limits."nvidia.com/gpu").
bool GpuRequest(const YAML::Node& c) {
  const YAML::Node resources = c["resources"];
  if (!resources) return false;
  const YAML::Node limits = resources["limits"];
  return limits && limits["nvidia.com/gpu"];
}
// The daemon's SHEFL_DEVICE, which its command passes as --device.
std::string DeviceOf(const YAML::Node& c) {
  CHECK_THAT(Command(c), Catch::Contains("--device $SHEFL_DEVICE"));
  for (const auto& e : c["env"])
    if (e["name"].as<std::string>() == "SHEFL_DEVICE") return e["value"].as<std::string>();
  return "";
}
int ContainerPort(const YAML::Node& c, const std::string& name) {
  for (const auto& p : c["ports"])
    if (p["name"].as<std::string>() == name) return p["containerPort"].as<int>();
  FAIL("no container port " << name);
  return 0;
}

TEST_CASE("the rendered manifests agree with each other and with the binaries") {
  const auto docs = Render(kK8s);
  const YAML::Node cs = Find(docs, "StatefulSet", "shefl-coordinator");
  const YAML::Node ds = Find(docs, "StatefulSet", "shefl-daemon");
  const YAML::Node csvc = Find(docs, "Service", "shefl-coordinator");
  const YAML::Node dsvc = Find(docs, "Service", "shefl-daemon");
  for (const auto& [set, svc] : {std::pair{cs, csvc}, std::pair{ds, dsvc}}) {
    const YAML::Node tmpl = set["spec"]["template"];
    CHECK(set["spec"]["serviceName"].as<std::string>() ==
          svc["metadata"]["name"].as<std::string>());
    for (const auto& kv : svc["spec"]["selector"])
      CHECK(tmpl["metadata"]["labels"][kv.first.as<std::string>()].as<std::string>() ==
            kv.second.as<std::string>());
    const YAML::Node c = tmpl["spec"]["containers"][0];
    for (const auto& p : svc["spec"]["ports"])
      CHECK(ContainerPort(c, p["targetPort"].as<std::string>()) > 0);
    CHECK(tmpl["metadata"]["annotations"]["prometheus.io/port"].as<std::string>() ==
          std::to_string(ContainerPort(c, "metrics")));
    CHECK(PortOf(Command(c), "--metrics-listen") == ContainerPort(c, "metrics"));
  }
  const YAML::Node coordinator = cs["spec"]["template"]["spec"]["containers"][0];
  const std::string ccmd = Command(coordinator);
  CHECK(PortOf(ccmd, "--listen") == ContainerPort(coordinator, "grpc"));
  CHECK(coordinator["livenessProbe"]["grpc"]["port"].as<int>() == PortOf(ccmd, "--health-listen"));
  CHECK(coordinator["readinessProbe"]["grpc"]["port"].as<int>() == PortOf(ccmd, "--health-listen"));
  const YAML::Node daemon = ds["spec"]["template"]["spec"]["containers"][0];
  const std::string dcmd = Command(daemon);
  CHECK_THAT(dcmd, Catch::Contains("--coordinator " + csvc["metadata"]["name"].as<std::string>() +
                                   ":" + std::to_string(ContainerPort(coordinator, "grpc"))));
  // The base runs on CPUs: the image from docker/Dockerfile has a CPU
  // LibTorch, so a GPU request would only keep the pods pending.
  CHECK_FALSE(GpuRequest(daemon));
  CHECK(DeviceOf(daemon) == "cpu");
  // Every flag is documented by the binary it is passed to.
  for (const auto& [cmd, bin] : {std::pair{ccmd, "/shefl-coordinator"},
                                 std::pair{dcmd, "/shefl-client"}}) {
    const std::string usage = RunProcess({BinDir() + bin, "--help"}, 60).output;
    const std::regex flag("(--[a-z][a-z-]*[a-z])\\b");
    int n = 0;
    for (std::sregex_iterator it(cmd.begin(), cmd.end(), flag), end; it != end; ++it, ++n) {
      INFO(bin << " " << (*it)[1]);
      CHECK(usage.find((*it)[1].str()) != std::string::npos);
    }
    CHECK(n >= 8);
  }
  // The experiment is a config shefl accepts, mounted under its hashed name.
  const YAML::Node cm = Find(docs, "ConfigMap", "shefl-experiment");
  auto config = ParseConfig(cm["data"]["config.yaml"].as<std::string>(), "the ConfigMap");
  INFO(config.status());
  CHECK(config.ok());
  bool mounted = false;
  for (const auto& v : cs["spec"]["template"]["spec"]["volumes"])
    mounted = mounted || (v["configMap"] && v["configMap"]["name"].as<std::string>() ==
                                                cm["metadata"]["name"].as<std::string>());
  CHECK(mounted);
}

TEST_CASE("the GPU overlay gives each daemon a GPU, the CUDA image and cuda:0") {
  const auto docs = Render(kK8s + "/overlays/gpu");
  const YAML::Node daemon =
      Find(docs, "StatefulSet", "shefl-daemon")["spec"]["template"]["spec"]["containers"][0];
  REQUIRE(GpuRequest(daemon));
  CHECK(daemon["resources"]["limits"]["nvidia.com/gpu"].as<int>() == 1);
  CHECK(DeviceOf(daemon) == "cuda:0");
  CHECK(daemon["image"].as<std::string>() == "shefl:cuda");
  CHECK(daemon["imagePullPolicy"].as<std::string>() == "IfNotPresent");
  // The coordinator needs no GPU and keeps the CPU image.
  const YAML::Node coordinator =
      Find(docs, "StatefulSet", "shefl-coordinator")["spec"]["template"]["spec"]["containers"][0];
  CHECK(coordinator["image"].as<std::string>() == "shefl:latest");
  CHECK_FALSE(GpuRequest(coordinator));
}

// Every image the manifests name is one the user builds (no public
// registry has shefl), with a pull policy that uses an image loaded into
// the nodes, and docs/DEPLOYMENT.md says how to build, load or push it.
TEST_CASE("the images are ones the docs say how to build and provide") {
  const std::string deployment =
      testing::ReadFile(std::string(SHEFL_SOURCE_DIR) + "/docs/DEPLOYMENT.md");
  for (const std::string& dir : {kK8s, kK8s + "/overlays/gpu"}) {
    const auto docs = Render(dir);
    int containers = 0;
    for (const YAML::Node& d : docs) {
      if (d["kind"].as<std::string>() != "StatefulSet") continue;
      for (const auto& c : d["spec"]["template"]["spec"]["containers"]) {
        ++containers;
        const std::string image = c["image"].as<std::string>();
        INFO(dir << ": " << image);
        REQUIRE(c["imagePullPolicy"]);
        CHECK(c["imagePullPolicy"].as<std::string>() == "IfNotPresent");
        CHECK((image == "shefl:latest" || image == "shefl:cuda"));
        // Built, loaded into kind and minikube, or pushed and named.
        CHECK_THAT(deployment, Catch::Contains("-t " + image + " ."));
        CHECK_THAT(deployment, Catch::Contains("kind load docker-image " + image));
        CHECK_THAT(deployment, Catch::Contains("minikube image load " + image));
      }
    }
    CHECK(containers == 2);
  }
  CHECK_THAT(deployment, Catch::Contains("kustomize edit set image"));
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

// The pods read their Secret as uid 10001 through fsGroup, each daemon pod
// shows its own certificate and token, and secrets.sh never ships ca.key.
TEST_CASE("the Secrets carry each pod its own certificate and never the CA's key") {
  const auto docs = Render(kK8s);
  for (const char* set : {"shefl-coordinator", "shefl-daemon"}) {
    const YAML::Node pod = Find(docs, "StatefulSet", set)["spec"]["template"]["spec"];
    INFO(set);
    CHECK(pod["securityContext"]["fsGroup"].as<int>() == 10001);
    CHECK(pod["securityContext"]["runAsUser"].as<int>() == 10001);
  }
  const YAML::Node daemon = Find(docs, "StatefulSet", "shefl-daemon")["spec"]["template"]["spec"];
  const std::string command = Command(daemon["containers"][0]);
  CHECK_THAT(command, Catch::Contains("/etc/shefl/pki/client-$k.pem"));
  CHECK_THAT(command, Catch::Contains("/etc/shefl/pki/client-$k.token"));
  CHECK(daemon["volumes"][0]["secret"]["secretName"].as<std::string>() == "shefl-daemon-pki");
  for (const auto& e : daemon["containers"][0]["env"])
    if (e["name"].as<std::string>() == "SHEFL_DEVICE")
      CHECK(e["value"].as<std::string>() == "cpu");  // not cuda:0: Debian's LibTorch has no CUDA

  testing::TempDir dir;
  const std::string pki = dir / "pki";
  REQUIRE(RunProcess({BinDir() + "/shefl", "certs", "--out", pki, "--hosts", "shefl-coordinator",
                      "--clients", "3"},
                     60)
              .exit_code == 0);
  auto r = RunProcess({"/bin/sh", "-c", kK8s + "/secrets.sh '" + pki + "' --print"}, 120);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, std::set<std::string>> keys;
  for (const YAML::Node& d : YAML::LoadAll(r.output))
    if (d && d["kind"])
      for (const auto& kv : d["data"])
        keys[d["metadata"]["name"].as<std::string>()].insert(kv.first.as<std::string>());
  CHECK(keys["shefl-coordinator-pki"] ==
        std::set<std::string>{"ca.pem", "server.pem", "server.key", "tokens"});
  std::set<std::string> daemons = {"ca.pem"};
  for (int k = 0; k < 3; ++k)
    for (const char* ext : {".pem", ".key", ".token"})
      daemons.insert("client-" + std::to_string(k) + ext);
  CHECK(keys["shefl-daemon-pki"] == daemons);
  // A folder without the certificates: refused, naming the file.
  const std::string empty = dir / "empty";
  auto bad = RunProcess({"/bin/sh", "-c", kK8s + "/secrets.sh '" + empty + "' --print 2>&1"}, 60);
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("ca.pem is missing"));
}

}  // namespace
}  // namespace shefl
