// `shefl report --plots DIR --markdown FILE` on real run folders (two
// seeds of one config): three non-empty PNGs, and a Markdown table whose
// numbers are the runs' summary.json figures (mean and std of the final
// accuracy, mean total MB) and that names the folders it read.
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

bool IsPng(const std::string& path) {
  const std::string bytes = ReadFile(path);
  return bytes.size() > 2000 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

TEST_CASE("shefl report writes plots and a table of the runs it read") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  std::vector<std::string> runs;
  for (const char* seed : {"1", "2"}) {
    runs.push_back(dir / (std::string("seed") + seed));
    auto r = RunProcess({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons", "1",
                         "--threads", "1", "--insecure", "--out", runs.back(), "--set",
                         std::string("seed=") + seed},
                        300);
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
  }
  auto r = RunProcess({BinDir() + "/shefl", "report", runs[0], runs[1], "--plots",
                       dir / "plots", "--markdown", dir / "table.md"},
                      120);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const char* png : {"accuracy_vs_round.png", "accuracy_vs_bytes.png",
                          "bytes_per_round.png"}) {
    INFO(png);
    CHECK(IsPng(dir / ("plots/" + std::string(png))));
  }
  double a[2], mb = 0;
  for (int i = 0; i < 2; ++i) {
    auto s = nlohmann::json::parse(ReadFile(runs[i] + "/summary.json"));
    a[i] = 100 * s["final_accuracy"].get<double>();
    mb += (s["total_bytes_up"].get<double>() + s["total_bytes_down"].get<double>()) / 1e6 / 2;
  }
  const double mean = (a[0] + a[1]) / 2, sd = std::fabs(a[0] - a[1]) / std::sqrt(2.0);
  char row[256];
  std::snprintf(row, sizeof(row), "| synthetic-test | 2 | %.2f ± %.2f | ", mean, sd);
  const std::string table = ReadFile(dir / "table.md");
  INFO(table);
  CHECK_THAT(table, Catch::Contains(row));
  char total[64];
  std::snprintf(total, sizeof(total), "| %.2f |", mb);
  CHECK_THAT(table, Catch::Contains(total));
  CHECK_THAT(table, Catch::Contains("`" + runs[0] + "`"));
  CHECK_THAT(table, Catch::Contains("`" + runs[1] + "`"));
  // A folder without a summary is named and fails the command.
  auto bad = RunProcess({BinDir() + "/shefl", "report", dir / "nothing"}, 60);
  CHECK(bad.exit_code == 1);
  CHECK_THAT(bad.output, Catch::Contains("nothing/summary.json"));
}

}  // namespace
}  // namespace shefl
