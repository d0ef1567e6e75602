// deploy/lab checked with the tools a lab operator runs: systemd-analyze
// verify accepts both units (with their binaries found), ansible-playbook
// --syntax-check accepts the playbook and its example inventory, every
// flag the units pass is one the binaries document, and the file each
// unit names as its Documentation= is one the playbook installs.
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::BinDir;
using testing::RunProcess;

const std::string kLab = std::string(SHEFL_SOURCE_DIR) + "/deploy/lab";
const char* kUnits[] = {"shefl-coordinator.service", "shefl-client.service"};

TEST_CASE("systemd-analyze verify accepts both units") {
  testing::TempDir dir;
  std::vector<std::string> argv = {"/usr/bin/systemd-analyze", "verify"};
  for (const char* unit : kUnits) {
    // Installed, the binaries are in /usr/local/bin; here they are built.
    const std::string text = std::regex_replace(
        testing::ReadFile(kLab + "/" + unit), std::regex("/usr/local/bin"), BinDir());
    testing::WriteFile(dir / unit, text);
    argv.push_back(dir / unit);
  }
  auto r = RunProcess(argv, 120);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  // verify does fail: the client unit with its binary missing.
  const std::string broken = std::regex_replace(
      testing::ReadFile(kLab + "/shefl-client.service"), std::regex("/usr/local/bin"),
      "/nonexistent");
  testing::WriteFile(dir / "broken.service", broken);
  CHECK(RunProcess({"/usr/bin/systemd-analyze", "verify", dir / "broken.service"}, 120)
            .exit_code != 0);
  for (const char* unit : kUnits) {
    const std::string text = testing::ReadFile(kLab + "/" + unit);
    INFO(unit);
    for (const char* hardening : {"User=shefl", "ProtectSystem=strict", "NoNewPrivileges=yes",
                                  "PrivateTmp=yes"})
      CHECK_THAT(text, Catch::Contains(hardening));
  }
  // The coordinator exits 0 at the run's end and stays down; a daemon is
  // told to exit when the coordinator stops or restarts, and comes back to
  // wait for it (lab_systemd_test restarts the coordinator mid-run).
  CHECK_THAT(testing::ReadFile(kLab + "/shefl-coordinator.service"),
             Catch::Contains("Restart=on-failure"));
  CHECK_THAT(testing::ReadFile(kLab + "/shefl-client.service"), Catch::Contains("Restart=always"));
}

TEST_CASE("ansible-playbook accepts the playbook and its example inventory") {
  auto r = RunProcess({"/usr/bin/ansible-playbook", "--syntax-check", "-i",
                       kLab + "/ansible/inventory.example.ini",
                       kLab + "/ansible/site.yml"},
                      300);
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("playbook: "));
}

TEST_CASE("every flag the units pass is one the binaries document") {
  std::string usage;
  for (const char* bin : {"/shefl-coordinator", "/shefl-client"})
    usage += RunProcess({BinDir() + bin, "--help"}, 60).output;
  std::set<std::string> flags;
  for (const char* unit : kUnits) {
    const std::string text = testing::ReadFile(kLab + "/" + unit);
    const std::regex flag(" (--[a-z][a-z-]*[a-z])\\b");
    for (std::sregex_iterator it(text.begin(), text.end(), flag), end; it != end; ++it)
      flags.insert((*it)[1].str());
  }
  CHECK(flags.size() >= 14u);
  for (const std::string& f : flags) {
    INFO(f);
    CHECK(usage.find(f) != std::string::npos);
  }
}

TEST_CASE("the playbook installs the document each unit names") {
  const YAML::Node plays = YAML::LoadFile(kLab + "/ansible/site.yml");
  std::map<std::string, std::string> installed;  // dest -> src
  for (const auto& play : plays)
    for (const auto& task : play["tasks"])
      if (task["ansible.builtin.copy"] && task["ansible.builtin.copy"]["src"] &&
          task["ansible.builtin.copy"]["dest"])
        installed[task["ansible.builtin.copy"]["dest"].as<std::string>()] =
            task["ansible.builtin.copy"]["src"].as<std::string>();
  int docs = 0;
  for (const char* unit : kUnits) {
    const std::string text = testing::ReadFile(kLab + "/" + unit);
    const std::regex doc("Documentation=file://(/[^ \n]+)");
    for (std::sregex_iterator it(text.begin(), text.end(), doc), end; it != end; ++it, ++docs) {
      const std::string path = (*it)[1];
      INFO(unit << " names " << path);
      REQUIRE(installed.count(path) == 1);
      // The playbook's src is relative to its folder and must exist.
      CHECK(std::filesystem::is_regular_file(kLab + "/ansible/" + installed[path]));
    }
  }
  CHECK(docs == 2);
}

}  // namespace
}  // namespace shefl
