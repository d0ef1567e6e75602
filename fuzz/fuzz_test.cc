// The bounded fuzz runs of the test suite: one test case a target, each
// building the libFuzzer targets if needed (fuzz/run-fuzzers.sh, clang-14,
// ASan + UBSan), replaying the checked-in corpus and fuzzing for a few
// seconds. A crash, a sanitizer report or a broken invariant fails it, and
// so does a machine without clang-14: fuzzing is not optional.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Seconds of fuzzing a target gets, after its corpus has replayed.
constexpr int kSeconds = 10;

struct Run {
  int exit_code = -1;
  std::string output;
};

Run RunFuzzer(const std::string& target) {
  const std::string command =
      std::string("'") + SHEFL_SOURCE_DIR + "/fuzz/run-fuzzers.sh' --build-dir '" +
      SHEFL_FUZZ_BUILD_DIR + "' --seconds " + std::to_string(kSeconds) + " " +
      target + " 2>&1";
  Run run;
  FILE* p = ::popen(command.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) run.output.append(buf, n);
  const int status = ::pclose(p);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return run;
}

size_t SeedFiles(const std::string& target) {
  namespace fs = std::filesystem;
  size_t n = 0;
  for (const auto& f : fs::directory_iterator(std::string(SHEFL_SOURCE_DIR) +
                                              "/fuzz/corpus/" + target))
    n += f.is_regular_file() ? 1 : 0;
  return n;
}

// "fuzz-summary target=T rc=0 execs=N ..." -> N, or -1.
long long Field(const std::string& output, const std::string& name) {
  std::smatch m;
  const std::regex re("fuzz-summary .*\\b" + name + "=([0-9]+)");
  return std::regex_search(output, m, re) ? std::stoll(m[1]) : -1;
}

void CheckTarget(const std::string& target) {
  const size_t seeds = SeedFiles(target);
  REQUIRE(seeds > 0);
  const Run run = RunFuzzer(target);
  INFO(run.output.substr(run.output.size() > 12000 ? run.output.size() - 12000 : 0));
  REQUIRE(run.exit_code == 0);
  // Every seed replayed (libFuzzer counts them in its seed corpus line,
  // with the inputs earlier runs found), then fuzzing went on past them.
  std::smatch m;
  REQUIRE(std::regex_search(run.output, m,
                            std::regex("seed corpus: files: ([0-9]+)")));
  CHECK(std::stoul(m[1]) >= seeds);
  CHECK(Field(run.output, "execs") > static_cast<long long>(seeds));
  CHECK(Field(run.output, "cov") > 0);
}

TEST_CASE("fuzz target codec: delta decoder corpus and fuzzing find nothing") {
  CheckTarget("codec");
}

TEST_CASE("fuzz target config: config loader corpus and fuzzing find nothing") {
  CheckTarget("config");
}

TEST_CASE("fuzz target http_head: /metrics head reader corpus and fuzzing find nothing") {
  CheckTarget("http_head");
}

TEST_CASE("fuzz target registry: registration corpus and fuzzing find nothing") {
  CheckTarget("registry");
}

TEST_CASE("fuzz target upload: upload assembler corpus and fuzzing find nothing") {
  CheckTarget("upload");
}

}  // namespace
}  // namespace shefl
