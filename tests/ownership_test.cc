// Durable ownership of client ids and daemon names (ClientRegistry's
// Ownership, server/run/ownership_file.h): after a restart the first identity
// to register cannot take another's clients or name, and an auto:N daemon
// restarted under a new name gets back its own identity's ids once their
// session is gone.
#include "server/run/ownership_file.h"
#include "server/state/client_registry.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

v1::RegisterRequest Req(const std::string& name, std::vector<int64_t> ids,
                        uint32_t auto_n = 0) {
  v1::RegisterRequest r;
  r.set_daemon_name(name);
  for (int64_t id : ids) r.add_clients()->set_client_id(id);
  if (auto_n > 0) r.set_auto_clients(auto_n);
  return r;
}

TEST_CASE("ownership survives a restart through its file", "[ownership]") {
  testing::TempDir dir;
  ClientRegistry before(4);
  REQUIRE(before.Register(Req("a", {0, 1}), "cert:A;").ok());
  REQUIRE(before.Register(Req("b", {2, 3}), "cert:B;").ok());
  REQUIRE(SaveOwnership(dir / "own.json", before.GetOwnership()).ok());

  auto loaded = LoadOwnership(dir / "own.json");
  REQUIRE(loaded.ok());
  ClientRegistry after(4);
  after.RestoreOwnership(*loaded);
  // B first after the restart: neither A's ids nor A's name are B's.
  auto steal = after.Register(Req("b", {0, 1}), "cert:B;");
  CHECK(steal.status().code() == absl::StatusCode::kPermissionDenied);
  auto name = after.Register(Req("a", {2}), "cert:B;");
  CHECK(name.status().code() == absl::StatusCode::kPermissionDenied);
  auto bauto = after.Register(Req("b2", {}, 2), "cert:B;");
  REQUIRE(bauto.ok());
  CHECK((*bauto)->clients == std::vector<int64_t>{2, 3});
  CHECK(after.Register(Req("a", {0, 1}), "cert:A;").ok());
}

TEST_CASE("a damaged ownership file is refused naming it", "[ownership]") {
  testing::TempDir dir;
  testing::WriteFile(dir / "own.json", "{\"clients\": {\"x\": \"cert:A\"}, \"names\": {}}");
  auto r = LoadOwnership(dir / "own.json");
  CHECK(r.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("own.json"));
  CHECK(absl::IsNotFound(LoadOwnership(dir / "none.json").status()));
}

TEST_CASE("auto:N under a new name takes back its identity's dead session's ids",
          "[ownership]") {
  ClientRegistry r(2);
  auto old = r.Register(Req("host-1", {}, 2), "token");
  REQUIRE(old.ok());
  r.SetFeedOpen(*old, true);
  // While the old session's feed is open its ids are not free.
  CHECK(r.Register(Req("host-2", {}, 2), "token").status().code() ==
        absl::StatusCode::kResourceExhausted);
  r.SetFeedOpen(*old, false);  // the container is gone
  auto fresh = r.Register(Req("host-2", {}, 2), "token");
  REQUIRE(fresh.ok());
  CHECK((*fresh)->clients == std::vector<int64_t>{0, 1});
  // Another identity never gets them.
  ClientRegistry s(2);
  auto o = s.Register(Req("host-1", {}, 2), "cert:A;");
  REQUIRE(o.ok());
  CHECK(s.Register(Req("host-2", {}, 2), "cert:B;").status().code() ==
        absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace shefl

namespace shefl {
namespace {

TEST_CASE("an ownership file of the earlier form still loads", "[ownership]") {
  testing::TempDir dir;
  testing::WriteFile(dir / "old.json",
                     "{\"clients\": {\"0\": \"cert:A;\", \"1\": \"cert:A;\", "
                     "\"2\": \"cert:B;\"}, \"names\": {\"a\": \"cert:A;\"}}");
  auto loaded = LoadOwnership(dir / "old.json");
  REQUIRE(loaded.ok());
  CHECK(loaded->identities.size() == 2);
  CHECK(loaded->client_owner == std::vector<int32_t>{0, 0, 1});
  ClientRegistry r(4);
  r.RestoreOwnership(*loaded);
  CHECK(r.Register(Req("b", {0}), "cert:B;").status().code() ==
        absl::StatusCode::kPermissionDenied);
  CHECK(r.Register(Req("b", {2, 3}), "cert:B;").ok());
  // The compact form, damaged: an owner index past the identities.
  testing::WriteFile(dir / "bad.json",
                     "{\"identities\": [\"cert:A;\"], \"client_owner\": [0, 5], "
                     "\"names\": {}}");
  auto bad = LoadOwnership(dir / "bad.json");
  CHECK(bad.status().code() == absl::StatusCode::kDataLoss);
  CHECK_THAT(std::string(bad.status().message()),
             Catch::Contains("bad.json") && Catch::Contains("client 1"));
}

}  // namespace
}  // namespace shefl
