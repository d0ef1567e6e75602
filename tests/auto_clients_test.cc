// --clients auto:N: the coordinator picks the clients of a daemon that
// asks for N (scaled containers have no index to split ranges by): the
// lowest free ids, never one another session holds, the same ones again
// for a name that had them, and a clear refusal when too few are left.
// Then two real daemons with auto:4 run a whole run.
#include "tests/coordinator_harness.h"  // first: see its comment

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

grpc::Status RegisterAuto(Harness& h, const std::string& name, uint32_t n,
                          std::vector<uint32_t>* got) {
  v1::RegisterRequest req;
  req.set_daemon_name(name);
  req.set_auto_clients(n);
  v1::RegisterReply reply;
  grpc::ClientContext ctx;
  const grpc::Status st = h.stub->Register(&ctx, req, &reply);
  got->assign(reply.clients().begin(), reply.clients().end());
  return st;
}

TEST_CASE("auto registrations get disjoint free clients and the same ones again") {
  HarnessOptions ho;
  ho.last_client = 1;  // the harness's own daemon holds clients 0 and 1
  Harness h("", ho);
  std::vector<uint32_t> a, b, c, again;
  REQUIRE(RegisterAuto(h, "a", 3, &a).ok());
  REQUIRE(RegisterAuto(h, "b", 3, &b).ok());
  CHECK(a == std::vector<uint32_t>{2, 3, 4});
  CHECK(b == std::vector<uint32_t>{5, 6, 7});
  const grpc::Status none = RegisterAuto(h, "c", 1, &c);
  CHECK(none.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(none.error_message(), Catch::Contains("only 0 are free"));
  // "a" back (a restarted container): its clients again, not fresh ones.
  REQUIRE(RegisterAuto(h, "a", 3, &again).ok());
  CHECK(again == a);
}

TEST_CASE("two daemons with clients auto:4 run a whole run") {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  const int port = FreePort();
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml",
                       "--listen", "127.0.0.1:" + std::to_string(port), "--out",
                       dir / "run", "--threads", "1", "--insecure"},
                      dir / "c.log");
  std::vector<int> daemons;
  for (const char* name : {"x", "y"})
    daemons.push_back(Spawn({BinDir() + "/shefl-client", "--coordinator",
                             "127.0.0.1:" + std::to_string(port), "--clients", "auto:4",
                             "--name", name, "--out", dir / "run/daemons", "--threads",
                             "1", "--insecure"},
                            dir / (std::string(name) + ".log")));
  INFO(ReadFile(dir / "c.log") << ReadFile(dir / "x.log") << ReadFile(dir / "y.log"));
  CHECK(WaitFor(c, 300) == 0);
  for (int d : daemons) CHECK(WaitFor(d, 60) == 0);
  CHECK(ReadJsonl(dir / "run/rounds.jsonl").size() == 3u);
  const std::string logs = ReadFile(dir / "x.log") + ReadFile(dir / "y.log");
  CHECK_THAT(logs, Catch::Contains("assigned clients 0..3"));
  CHECK_THAT(logs, Catch::Contains("assigned clients 4..7"));
}

}  // namespace
}  // namespace shefl
