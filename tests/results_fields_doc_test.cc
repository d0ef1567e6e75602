// docs/RUNNING.md ("Results") describes every field of the results folder's
// rounds.jsonl and summary.json: a real `shefl run` (a small synthetic
// experiment, as a process) writes both, and every top-level key of each
// round's line and of the summary must be named, in backquotes, in that
// section. A field added to the coordinator without a line in the docs
// fails here, naming it.
#include <set>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

// The text of docs/RUNNING.md from "## Results" to the next "## " heading.
std::string ResultsSection(const std::string& doc) {
  const size_t start = doc.find("\n## Results\n");
  if (start == std::string::npos) return "";
  const size_t end = doc.find("\n## ", start + 1);
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The keys of `objects` that `section` does not name as `key`.
std::set<std::string> Undocumented(const std::vector<nlohmann::json>& objects,
                                   const std::string& section) {
  std::set<std::string> missing;
  for (const nlohmann::json& o : objects)
    for (const auto& item : o.items())
      if (section.find("`" + item.key() + "`") == std::string::npos)
        missing.insert(item.key());
  return missing;
}

std::string Join(const std::set<std::string>& keys) {
  std::string out;
  for (const std::string& k : keys) out += k + " ";
  return out;
}

TEST_CASE("every field of a real run's rounds.jsonl and summary.json is in docs/RUNNING.md") {
  const std::string section =
      ResultsSection(ReadFile(std::string(SHEFL_SOURCE_DIR) + "/docs/RUNNING.md"));
  REQUIRE(section.size() > 1000);
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const std::string run = dir / "run";
  const int launcher = Spawn({BinDir() + "/shefl", "run", dir / "c.yaml", "--daemons", "1",
                              "--threads", "1", "--out", run, "--set", "rounds=2"},
                             dir / "launcher.log");
  INFO(ReadFile(dir / "launcher.log"));
  REQUIRE(WaitFor(launcher, 300) == 0);
  const auto rounds = ReadJsonl(run + "/rounds.jsonl");
  REQUIRE(rounds.size() == 2);
  // A real line has dozens of fields; the check below is not vacuous.
  CHECK(rounds.back().size() >= 40u);
  const auto summary = nlohmann::json::parse(ReadFile(run + "/summary.json"));
  CHECK(summary.size() >= 15u);
  const std::set<std::string> round_missing = Undocumented(rounds, section);
  INFO("rounds.jsonl fields missing from docs/RUNNING.md: " << Join(round_missing));
  CHECK(round_missing.empty());
  const std::set<std::string> summary_missing = Undocumented({summary}, section);
  INFO("summary.json fields missing from docs/RUNNING.md: " << Join(summary_missing));
  CHECK(summary_missing.empty());
}

TEST_CASE("a field the section does not name is reported") {
  const std::string section = "\n## Results\n| `round` | the round |\n";
  const nlohmann::json line = {{"round", 1}, {"wall_seconds", 2.0}};
  CHECK(Undocumented({line}, ResultsSection(section + "\n## Faults\n`wall_seconds`\n")) ==
        std::set<std::string>{"wall_seconds"});
  CHECK(Undocumented({line}, ResultsSection(section + "`wall_seconds`\n")).empty());
}

}  // namespace
}  // namespace shefl
