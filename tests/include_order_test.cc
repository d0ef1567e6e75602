// The tree's #include blocks are in the order .clang-format gives
// (scripts/sort_includes.py --check over every tracked C++ file), and the
// check catches a file whose includes are out of order.
#include <string>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

const std::string kScript =
    std::string(SHEFL_SOURCE_DIR) + "/scripts/sort_includes.py";

TEST_CASE("every tracked C++ file has its includes in order") {
  const ProcessResult r =
      RunProcess({"/usr/bin/python3", kScript, "--check"}, 300);
  INFO(r.output);
  CHECK(r.exit_code == 0);
}

TEST_CASE("an include out of order is named") {
  TempDir dir;
  const std::string file = dir / "x.cc";
  WriteFile(file,
            "#include \"x.h\"\n\n#include <vector>\n#include <map>\n\n"
            "#include \"server/b.h\"\n#include \"common/a.h\"\n\nint x;\n");
  const ProcessResult bad =
      RunProcess({"/usr/bin/python3", kScript, "--check", file}, 60);
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("x.cc") != std::string::npos);
  // Sorting it makes it pass, and leaves the code after the includes.
  REQUIRE(RunProcess({"/usr/bin/python3", kScript, file}, 60).exit_code == 0);
  const std::string text = ReadFile(file);
  CHECK(text.find("#include <map>\n#include <vector>") != std::string::npos);
  CHECK(text.find("#include \"common/a.h\"\n#include \"server/b.h\"") !=
        std::string::npos);
  CHECK(text.find("\nint x;\n") != std::string::npos);
  CHECK(RunProcess({"/usr/bin/python3", kScript, "--check", file}, 60)
            .exit_code == 0);
}

}  // namespace
}  // namespace shefl
