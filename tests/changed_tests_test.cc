// scripts/changed_tests.py, the selection of scripts/test.sh --changed: in
// a scratch git tree, a changed source picks the tests that include its
// header (directly or through a tests/*.h), a changed script the tests
// that name it, and a test that only shares a library is left out.
#include <filesystem>
#include <string>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

const std::string kScript =
    std::string(SHEFL_SOURCE_DIR) + "/scripts/changed_tests.py";

// WriteFile with the folders it needs.
void Put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  WriteFile(path, text);
}

struct Tree {
  TempDir dir;
  std::string root = dir / "root";
  std::string build = dir / "build";

  Tree() {
    Put(root + "/common/fed/mix.h", "int Mix();\n");
    Put(root + "/common/fed/mix.cc", "#include \"common/fed/mix.h\"\nint Mix() { return 1; }\n");
    Put(root + "/common/fed/other.h", "int Other();\n");
    Put(root + "/scripts/go.sh", "echo go\n");
    Put(root + "/tests/harness.h", "#include \"common/fed/mix.h\"\n");
    Put(root + "/tests/direct_test.cc", "#include \"common/fed/mix.h\"\n");
    Put(root + "/tests/via_harness_test.cc", "#include \"tests/harness.h\"\n");
    Put(root + "/tests/script_test.cc", "const char* k = \"scripts/go.sh\";\n");
    Put(root + "/tests/unrelated_test.cc", "#include \"common/fed/other.h\"\n");
    Put(build + "/test_labels.txt",
              "direct_test fed\nvia_harness_test fed\nscript_test \nunrelated_test fed\n");
    Git("init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm base");
  }
  void Git(const std::string& args) {
    const ProcessResult r =
        RunProcess({"/bin/bash", "-c", "cd " + root + " && git " + args}, 30);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  ProcessResult Select() {
    return RunProcess({"/usr/bin/python3", kScript, build, root}, 30);
  }
};

TEST_CASE("a changed source picks the tests that include its header, and no others") {
  Tree t;
  Put(t.root + "/common/fed/mix.cc", "#include \"common/fed/mix.h\"\nint Mix() { return 2; }\n");
  const ProcessResult r = t.Select();
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("direct_test includes common/fed/mix.h"));
  CHECK_THAT(r.output, Catch::Contains("via_harness_test includes common/fed/mix.h"));
  CHECK_THAT(r.output, !Catch::Contains("unrelated_test"));
  CHECK_THAT(r.output, !Catch::Contains("script_test"));
  // The source checks' list: the changed source, by its absolute path.
  const ProcessResult src = RunProcess(
      {"/usr/bin/python3", kScript, "--sources", t.root}, 30);
  INFO(src.output);
  CHECK(src.exit_code == 0);
  CHECK_THAT(src.output, Catch::Contains("/common/fed/mix.cc"));
  CHECK_THAT(src.output, !Catch::Contains("other"));
}

TEST_CASE("an unknown REF is refused, naming it") {
  Tree t;
  const ProcessResult r =
      RunProcess({"/usr/bin/python3", kScript, t.build, t.root, "nosuchref"}, 30);
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("nosuchref"));
}

TEST_CASE("a changed script picks the tests that name it, and a clean tree falls back to the last commit") {
  Tree t;
  Put(t.root + "/scripts/go.sh", "echo went\n");
  const ProcessResult dirty = t.Select();
  INFO(dirty.output);
  CHECK_THAT(dirty.output, Catch::Contains("script_test names scripts/go.sh"));
  CHECK_THAT(dirty.output, !Catch::Contains("direct_test"));
  t.Git("-c user.email=t@t -c user.name=t commit -qam 'the script'");
  const ProcessResult clean = t.Select();
  INFO(clean.output);
  CHECK_THAT(clean.output, Catch::Contains("the last commit"));
  CHECK_THAT(clean.output, Catch::Contains("script_test names scripts/go.sh"));
}

}  // namespace
}  // namespace shefl
