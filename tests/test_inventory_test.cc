// A test of the build itself: every Catch2 test case of every test binary
// is run by exactly one ctest entry, and every ctest entry runs a test case.
// catch_discover_tests once split names containing ';' into two entries
// that each matched nothing, and Catch2 exits 0 on an empty match unless
// told `-w NoTests`: ctest reported passes for tests that never ran.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// stdout of a shell command run in `dir` (stderr dropped), and its status.
std::string Capture(const std::string& dir, const std::string& command,
                    int* status) {
  const std::string line = "cd '" + dir + "' && " + command + " 2>/dev/null";
  FILE* p = ::popen(line.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *status = ::pclose(p);
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(line);
  return out;
}

// catch_discover_tests escapes ',', '[' and ']' in the spec it passes.
std::string Unescape(const std::string& spec) {
  std::string out;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == '\\' && i + 1 < spec.size() &&
        (spec[i + 1] == ',' || spec[i + 1] == '[' || spec[i + 1] == ']'))
      ++i;
    out.push_back(spec[i]);
  }
  return out;
}

struct Entry {
  std::string name, binary, spec;
  bool warns_no_tests = false;
};

std::vector<Entry> CtestEntries() {
  int status = 0;
  const std::string json = Capture(
      SHEFL_BINARY_DIR, std::string("'") + SHEFL_CTEST_COMMAND +
                            "' --show-only=json-v1", &status);
  REQUIRE(status == 0);
  std::vector<Entry> out;
  const nlohmann::json doc = nlohmann::json::parse(json);
  for (const auto& t : doc.at("tests")) {
    const auto& cmd = t["command"];
    REQUIRE(cmd.size() >= 2u);
    Entry e{t["name"], cmd[0], cmd[1]};
    for (size_t i = 2; i + 1 < cmd.size(); ++i)
      e.warns_no_tests |= cmd[i] == "-w" && cmd[i + 1] == "NoTests";
    out.push_back(e);
  }
  return out;
}

// Executables named *_test in build/bin, where every target lands.
std::set<std::string> TestBinaries() {
  namespace fs = std::filesystem;
  std::set<std::string> out;
  for (const auto& f : fs::directory_iterator(std::string(SHEFL_BINARY_DIR) + "/bin")) {
    const std::string name = f.path().filename().string();
    if (f.is_regular_file() && name.size() > 5 &&
        name.compare(name.size() - 5, 5, "_test") == 0 &&
        (f.status().permissions() & fs::perms::owner_exec) != fs::perms::none)
      out.insert(f.path().string());
  }
  return out;
}

TEST_CASE("every Catch2 test case runs under exactly one ctest entry") {
  const std::vector<Entry> entries = CtestEntries();
  REQUIRE(entries.size() > 100u);
  std::map<std::string, std::map<std::string, int>> runs;  // binary -> case
  for (const Entry& e : entries) runs[e.binary][Unescape(e.spec)]++;

  const std::set<std::string> binaries = TestBinaries();
  REQUIRE(binaries.size() >= 10u);
  for (const std::string& binary : binaries) {
    INFO("binary " << binary);
    CHECK(runs.count(binary) == 1u);  // registered with ctest at all
    int status = 0;
    const auto names = Lines(Capture(
        SHEFL_BINARY_DIR, "'" + binary + "' --list-test-names-only", &status));
    CHECK_FALSE(names.empty());
    std::set<std::string> known(names.begin(), names.end());
    CHECK(known.size() == names.size());  // no two cases share a name
    for (const std::string& name : names) {
      INFO("test case '" << name << "'");
      CHECK(runs[binary][name] == 1);
    }
    for (const auto& [spec, count] : runs[binary]) {
      INFO("ctest runs '" << spec << "'");
      CHECK(known.count(spec) == 1u);  // the spec is a whole test case
    }
  }
  for (const Entry& e : entries) {
    INFO("ctest entry " << e.name);
    CHECK(binaries.count(e.binary) == 1u);
    CHECK(e.warns_no_tests);  // an empty match fails instead of passing
  }
}

TEST_CASE("test code checks with Catch, not with glog's CHECK") {
  // LibTorch brings glog, whose CHECK replaces Catch's when glog's header
  // comes after catch.hpp: the check then aborts the binary on failure,
  // unreported, and a pass counts nothing. glog's failure text in a test
  // binary means some test file has that include order.
  std::string list;
  for (const std::string& b : TestBinaries()) list += " '" + b + "'";
  int status = 0;
  // Built at run time, so this binary does not hold the text itself.
  const std::string needle = std::string("Check fail") + "ed: ";
  const std::string hits = Capture(
      SHEFL_BINARY_DIR, "grep -l -a -F '" + needle + "'" + list, &status);
  INFO(hits);
  CHECK(hits.empty());
  CHECK(WEXITSTATUS(status) == 1);  // grep ran and found nothing
}

}  // namespace
}  // namespace shefl
