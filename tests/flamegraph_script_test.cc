// scripts/flamegraph.py, the flame-graph renderer for perf's folded stacks:
// the SVG it writes parses as XML, its boxes are as wide as their samples,
// tooltips give samples and shares, odd characters come through escaped; a
// malformed line is named; --rename, --strip-prefix and --top do what they
// say; --help works.
#include <sstream>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

const std::string kScript =
    std::string(SHEFL_SOURCE_DIR) + "/scripts/flamegraph.py";

ProcessResult Flamegraph(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/python3", kScript};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, 60);
}

// One frame of the SVG as xml.etree reads it: the <g>'s <title>, its
// <rect>'s x and width, and its <text> label ("" when it has none).
struct Box {
  std::string title;
  double x = 0, width = 0;
  std::string label;
};

// Python prints one tab-separated line per <g>; a file that does not parse
// makes it fail, and then the list is empty.
const char kReadBoxes[] = R"(
import sys, xml.etree.ElementTree as E
ns = {"s": "http://www.w3.org/2000/svg"}
for g in E.parse(sys.argv[1]).getroot().iter("{http://www.w3.org/2000/svg}g"):
    r, t = g.find("s:rect", ns), g.find("s:text", ns)
    print(g.find("s:title", ns).text, r.get("x"), r.get("width"),
          "" if t is None else t.text, sep="\t")
)";

std::vector<Box> ReadBoxes(const std::string& svg) {
  const ProcessResult r = RunProcess({"/usr/bin/python3", "-c", kReadBoxes, svg}, 60);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<Box> boxes;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string s; std::getline(fields, s, '\t');) f.push_back(s);
    f.resize(4);
    boxes.push_back({f[0], std::stod(f[1]), std::stod(f[2]), f[3]});
  }
  return boxes;
}

// The widest box whose tooltip is for `frame` (a frame may appear under
// several callers); a blank Box if none.
Box Find(const std::vector<Box>& boxes, const std::string& frame) {
  Box widest;
  for (const Box& b : boxes)
    if (b.title.rfind(frame + " (", 0) == 0 && b.width > widest.width) widest = b;
  return widest;
}

TEST_CASE("a flame graph's boxes are as wide as their samples, with escaped names") {
  TempDir dir;
  const std::string odd = "std::vector<int>::at(a & \"b\")";
  // main 100 = a 40 (b 20+10, c 10) + d 60 (50 own, 10 in `odd`).
  WriteFile(dir / "folded.txt", "main;a;b 20\nmain;a;c 10\n\nmain;d 50\n"
                                "main;a;b 10\nmain;d;" + odd + " 10\n");
  const ProcessResult r = Flamegraph(
      {dir / "folded.txt", "--out", dir / "flame.svg", "--title", "Step <1> & 2"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string svg = ReadFile(dir / "flame.svg");
  CHECK_THAT(svg, Catch::Contains("Step &lt;1&gt; &amp; 2"));
  CHECK_THAT(svg, Catch::Contains(">100 samples</text>"));  // the subtitle

  const std::vector<Box> boxes = ReadBoxes(dir / "flame.svg");
  REQUIRE(boxes.size() == 7);  // all, main, a, b, c, d, odd
  const Box main = Find(boxes, "main"), a = Find(boxes, "a"), d = Find(boxes, "d"),
            b = Find(boxes, "b");
  CHECK(main.width == Approx(1180).margin(1));  // 1200 less the margins
  CHECK(a.width == Approx(0.4 * main.width).margin(1));
  CHECK(d.width == Approx(0.6 * main.width).margin(1));
  CHECK(b.width == Approx(0.3 * main.width).margin(1));  // duplicates summed
  CHECK(a.x < d.x);  // siblings sorted by name
  CHECK(d.title == "d (60 samples, 60.0%)");
  CHECK(b.title == "b (30 samples, 30.0%)");
  CHECK(Find(boxes, odd).title == odd + " (10 samples, 10.0%)");
  CHECK(Find(boxes, odd).label.rfind("std::vector<", 0) == 0);
  CHECK(Find(boxes, "main").label == "main");
}

TEST_CASE("a malformed line exits 2 naming its line number") {
  TempDir dir;
  WriteFile(dir / "folded.txt", "main;a 3\n\nmain;b not-a-count\nmain;c 4\n");
  const ProcessResult r = Flamegraph({dir / "folded.txt", "--out", dir / "flame.svg"});
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("line 3"));
  CHECK_THAT(r.output, Catch::Contains("main;b not-a-count"));
}

TEST_CASE("the script's --rename renames frames before merging and --top lists self time in order") {
  TempDir dir;
  WriteFile(dir / "folded.txt",
            "proc;main;[unknown];[unknown] 45\nproc;main;work 30\n"
            "proc;main;[unknown];leaf 15\nproc;main 5\nproc;main;work;[unknown] 5\n");
  const ProcessResult r =
      Flamegraph({dir / "folded.txt", "--out", dir / "flame.svg", "--rename",
                  "\\[unknown\\]=JIT code", "--top", "2", "--strip-prefix", "1"});
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  // Self samples: JIT code 45 + 5, work 30, leaf 15, main 5.
  const size_t jit = r.output.find("JIT code"), work = r.output.find("work");
  REQUIRE(jit != std::string::npos);
  REQUIRE(work != std::string::npos);
  CHECK(jit < work);
  CHECK_THAT(r.output, Catch::Contains("50.0%"));
  CHECK_THAT(r.output, Catch::Contains("30.0%"));
  CHECK_THAT(r.output, !Catch::Contains("leaf"));  // third: not in the top 2
  CHECK_THAT(r.output, !Catch::Contains("<svg"));  // the SVG went to --out

  const std::vector<Box> boxes = ReadBoxes(dir / "flame.svg");
  CHECK(Find(boxes, "JIT code").title == "JIT code (60 samples, 60.0%)");
  CHECK(Find(boxes, "[unknown]").title.empty());
  CHECK(Find(boxes, "proc").title.empty());  // stripped
  CHECK(Find(boxes, "main").title == "main (100 samples, 100.0%)");
}

TEST_CASE("the script's --help exits 0 and shows how to use it with perf") {
  const ProcessResult r = Flamegraph({"--help"});
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("usage: flamegraph.py"));
  CHECK_THAT(r.output, Catch::Contains("perf record -F 499 --call-graph dwarf"));
}

}  // namespace
}  // namespace shefl
