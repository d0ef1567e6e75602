// Stallers (server/state/staller_book.h): the book's rules on their own, and a
// real run with one daemon that takes its tasks and never answers
// (shefl-client --adversary stall): its clients are benched after
// clients.staller_strikes deadline rounds, and the rounds that follow no
// longer wait for the deadline.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "server/state/staller_book.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

TEST_CASE("strikes in a row bench a client for the rounds given", "[stallers]") {
  StallerBook book(2, 3);
  CHECK(book.Record(1, {5}, {1}, true).empty());
  CHECK_FALSE(book.Benched(5, 2));
  CHECK(book.Record(2, {5}, {}, true) == std::vector<int64_t>{5});
  for (int64_t r = 3; r <= 5; ++r) CHECK(book.Benched(5, r));
  CHECK_FALSE(book.Benched(5, 6));
  CHECK(book.BenchedCount(3) == 1);
  CHECK(book.strikes_total() == 2);
}

TEST_CASE("an update clears strikes, and a completed round strikes nobody",
          "[stallers]") {
  StallerBook book(2, 3);
  book.Record(1, {5}, {}, true);
  book.Record(2, {}, {5}, true);         // heard: strikes cleared
  CHECK(book.Record(3, {5}, {}, true).empty());
  CHECK(book.Record(4, {5}, {}, false).empty());  // completed round
  CHECK(book.strikes_total() == 2);
  StallerBook off(0, 3);
  for (int r = 1; r <= 5; ++r) CHECK(off.Record(r, {5}, {}, true).empty());
}

struct StallRun {
  std::vector<nlohmann::json> rounds;
  double slow_rounds = 0;  // rounds that ran to their deadline
};

StallRun Run(const std::vector<std::string>& sets) {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  std::vector<std::string> argv = {
      BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml", "--listen",
      "127.0.0.1:" + std::to_string(port), "--out", dir / "run", "--threads",
      "1", "--insecure", "--set", "rounds=8", "--set", "round_deadline_s=3",
      "--set", "clients.min_connected=8"};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  const int c = Spawn(argv, dir / "c.log");
  std::vector<int> daemons;
  for (int i = 0; i < 4; ++i) {
    std::vector<std::string> d = {
        BinDir() + "/shefl-client", "--coordinator",
        "127.0.0.1:" + std::to_string(port), "--clients",
        std::to_string(2 * i) + "-" + std::to_string(2 * i + 1), "--name",
        "d" + std::to_string(i), "--out", dir / "run/daemons", "--threads", "1",
        "--insecure"};
    if (i == 0) d.insert(d.end(), {"--adversary", "stall"});
    daemons.push_back(Spawn(d, dir / ("d" + std::to_string(i) + ".log")));
  }
  const int rc = WaitFor(c, 300);
  for (int pid : daemons) WaitFor(pid, 30);
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(rc == 0);
  StallRun out;
  out.rounds = ReadJsonl(dir / "run/rounds.jsonl");
  REQUIRE(out.rounds.size() == 8);
  for (const auto& r : out.rounds)
    out.slow_rounds += r["wall_seconds"].get<double>() >= 2.9;
  return out;
}

bool Sampled(const nlohmann::json& round, int64_t client) {
  for (const auto& p : round["participants"])
    if (p.get<int64_t>() == client) return true;
  return false;
}

TEST_CASE("a daemon that never answers is benched and stops slowing rounds",
          "[stallers]") {
  const StallRun on = Run({"clients.staller_strikes=1",
                           "clients.staller_rounds_out=100"});
  // Its clients (0 and 1) are benched the first time each is silent at a
  // deadline, and are never sampled after that round.
  std::map<int64_t, size_t> benched_at;  // client -> round index
  for (size_t i = 0; i < on.rounds.size(); ++i)
    for (const auto& b : on.rounds[i]["stallers"]["benched"])
      benched_at.emplace(b.get<int64_t>(), i);
  REQUIRE_FALSE(benched_at.empty());
  for (const auto& [client, at] : benched_at) {
    CHECK(client <= 1);
    for (size_t i = at + 1; i < on.rounds.size(); ++i) {
      INFO("client " << client << " benched in round " << at + 1
                     << ", sampled in round " << i + 1);
      CHECK_FALSE(Sampled(on.rounds[i], client));
    }
  }
  const StallRun off = Run({"clients.staller_strikes=0"});
  WARN("rounds that waited for the deadline: " << on.slow_rounds
       << " of 8 with strikes, " << off.slow_rounds << " of 8 without");
  CHECK(on.slow_rounds <= 2);  // at most one per staller client
  CHECK(off.slow_rounds > on.slow_rounds);
}

}  // namespace
}  // namespace shefl
