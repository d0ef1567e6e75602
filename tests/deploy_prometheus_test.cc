// deploy/prometheus/ checked by Debian's promtool (package prometheus):
// the scrape config and rule files are valid, every alert's unit test in
// deploy/prometheus/tests passes, and every shefl metric a rule reads is
// one the binaries export (a renamed metric would leave an alert that can
// never fire).
#include <filesystem>
#include <fstream>
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
  CHECK_THAT(rules.output, Catch::Contains("8 rules found"));
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
  CHECK(n == 8);
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

}  // namespace
}  // namespace shefl
