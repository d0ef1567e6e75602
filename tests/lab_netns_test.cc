// deploy/lab/netns-testbed.sh: a coordinator host and two daemon hosts in
// network namespaces on a bridge, links shaped with tc tbf, a real run
// across them with mutual TLS; the bytes each daemon accounted against the
// kernel's counters of its host's interface. The kernel also carries TCP,
// IP and TLS headers and the ACKs of the other direction, so it must be at
// least what was accounted, and not far above it. The namespaces are gone
// afterwards, also when the run fails.
#include <cstdio>
#include <regex>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::RunProcess;

const std::string kScript = std::string(SHEFL_SOURCE_DIR) + "/deploy/lab/netns-testbed.sh";

// The namespaces of the run whose output is `out` ("lab: namespaces TAG-*")
// that still exist.
bool Leftovers(const std::string& out) {
  std::smatch m;
  REQUIRE(std::regex_search(out, m, std::regex("lab: namespaces (\\S+)-\\*")));
  const std::string list = RunProcess({"/sbin/ip", "netns", "list"}, 30).output;
  return list.find(m[1].str() + "-") != std::string::npos;
}

TEST_CASE("a shaped three-host lab run accounts what the kernel carried") {
  testing::TempDir dir;
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  auto r = RunProcess({"/bin/bash", kScript, testing::BinDir(), dir / "c.yaml",
                       dir / "out", "20mbit"},
                      300);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  const std::regex line("lab: (d[12]) (up|down) +accounted (\\d+) kernel (\\d+) ratio ([0-9.]+)");
  int rows = 0;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), line), end; it != end; ++it) {
    const double accounted = std::stod((*it)[3]), kernel = std::stod((*it)[4]);
    INFO((*it)[0]);
    CHECK(accounted > 10000);
    CHECK(kernel >= accounted);
    CHECK(kernel <= 1.5 * accounted);
    std::printf("%s\n", (*it)[0].str().c_str());
    ++rows;
  }
  CHECK(rows == 4);
  CHECK(testing::ReadJsonl(dir / "out/run/rounds.jsonl").size() == 3u);
  CHECK_FALSE(Leftovers(r.output));
}

TEST_CASE("the lab removes its namespaces when the run fails") {
  testing::TempDir dir;
  testing::WriteFile(dir / "bad.yaml", testing::SyntheticConfig("rounds: -1\n"));
  auto r = RunProcess({"/bin/bash", kScript, testing::BinDir(), dir / "bad.yaml",
                       dir / "out"},
                      120);
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.output, Catch::Contains("coordinator failed"));
  CHECK_FALSE(Leftovers(r.output));
}

}  // namespace
}  // namespace shefl
