// `shefl report --plots DIR --markdown FILE` on real run folders (two
// seeds of one config): three non-empty PNGs, and a Markdown table whose
// numbers are the runs' summary.json figures (mean and std of the final
// accuracy, mean total MB) and that names the folders it read.
#include <cmath>
#include <cstdio>
#include <filesystem>

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

// A finished run folder written by hand: config.yaml with `extra` lines,
// one rounds.jsonl line per round, and summary.json.
void FakeRun(const std::string& dir, int seed, int rounds, double accuracy,
             const std::string& extra = "") {
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/config.yaml",
            "name: \"quick\"\nseed: " + std::to_string(seed) + "\nrounds: " +
                std::to_string(rounds) + "\nout_dir: \"" + dir + "\"\n" + extra);
  std::string lines;
  for (int r = 1; r <= rounds; ++r)
    lines += "{\"round\": " + std::to_string(r) + ", \"evaluated\": true, "
             "\"ensemble_accuracy\": " + std::to_string(accuracy) + "}\n";
  WriteFile(dir + "/rounds.jsonl", lines);
  WriteFile(dir + "/summary.json",
            nlohmann::json({{"rounds", rounds}, {"final_accuracy", accuracy},
                            {"best_accuracy", accuracy}, {"total_bytes_up", 1e6},
                            {"total_bytes_down", 2e6}})
                .dump());
}

TEST_CASE("shefl report pools only seeds of one config and names every run") {
  TempDir dir;
  FakeRun(dir / "a", 1, 3, 0.5, "train:\n  lr: 0.1\n");
  FakeRun(dir / "b", 2, 3, 0.7, "train:\n  lr: 0.1\n");
  FakeRun(dir / "c", 1, 5, 0.9, "train:\n  lr: 0.1\n");  // other rounds
  FakeRun(dir / "d", 1, 3, 0.2, "train:\n  lr: 0.2\n");  // another --set
  auto r = RunProcess({BinDir() + "/shefl", "report", dir / "a", dir / "b", dir / "c",
                       dir / "d", "--markdown", dir / "t.md"},
                      60);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::string table = ReadFile(dir / "t.md");
  INFO(table);
  // Seeds 1 and 2 of one config: one row, mean 60 and std 14.14.
  CHECK_THAT(table, Catch::Contains("| quick (rounds=3, train.lr=0.1) | 2 | 60.00 ± 14.14 |"));
  CHECK_THAT(table, Catch::Contains("| quick (rounds=5, train.lr=0.1) | 1 | 90.00 ± 0.00 |"));
  CHECK_THAT(table, Catch::Contains("| quick (rounds=3, train.lr=0.2) | 1 | 20.00 ± 0.00 |"));
  CHECK(Occurrences(table, "| quick") == 3);
  // The text table names each run by its folder.
  for (const char* run : {"a", "b", "c", "d"})
    CHECK_THAT(r.output, Catch::Contains(dir / run));
}

}  // namespace
}  // namespace shefl
