// What a missing daemon costs between rounds (server/state/lost_daemons.h):
// the default quorum, who the registry says is missing and for how long,
// and the book of losses summary.json `clients_lost` is made from.
#include "server/state/lost_daemons.h"

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "server/state/client_registry.h"
#include "shefl.pb.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

v1::RegisterRequest Hosting(const std::string& name, std::vector<int64_t> ids) {
  v1::RegisterRequest req;
  req.set_daemon_name(name);
  for (int64_t id : ids) req.add_clients()->set_client_id(id);
  return req;
}

TEST_CASE("the default quorum is the cohort or half of N, the larger") {
  ClientsConfig cl;
  cl.num_clients = 20;
  cl.per_round_hpc = 2;
  cl.per_round_lpc = 2;
  CHECK(ClientQuorum(cl) == 10);  // half of 20
  cl.num_clients = 21;
  CHECK(ClientQuorum(cl) == 11);  // rounded up
  cl.per_round_hpc = 9;
  cl.per_round_lpc = 9;
  CHECK(ClientQuorum(cl) == 18);  // the cohort
  cl.min_connected = 5;
  CHECK(ClientQuorum(cl) == 5);  // as set
  cl.min_connected = 0;
  cl.num_clients = 10;
  cl.per_round_hpc = 8;
  cl.per_round_lpc = 8;
  CHECK(ClientQuorum(cl) == 10);  // never above N
}

TEST_CASE("the registry says which daemons are missing, since when, and who hosts nobody") {
  ClientRegistry registry(6);
  auto a = registry.Register(Hosting("a", {0, 1}), "id-a");
  auto b = registry.Register(Hosting("b", {2, 3}), "id-b");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // Registered, no feed yet: missing, but still joining.
  auto joining = registry.MissingNow();
  REQUIRE(joining.daemons.size() == 2);
  CHECK_FALSE(joining.daemons[0].joined);
  registry.SetFeedOpen(*a, true);
  registry.SetFeedOpen(*b, true);
  auto missing = registry.MissingNow();
  CHECK(missing.daemons.empty());
  CHECK(missing.unhosted == 2);  // ids 4 and 5
  CHECK(missing.clients() == 2);
  CHECK(registry.SilentSeconds(0) == -1);
  CHECK(registry.SilentSeconds(4) >= 0);

  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  registry.SetFeedOpen(*b, false);
  missing = registry.MissingNow();
  REQUIRE(missing.daemons.size() == 1);
  CHECK(missing.daemons[0].name == "b");
  CHECK(missing.daemons[0].joined);
  CHECK(missing.daemons[0].clients == std::vector<int64_t>{2, 3});
  CHECK(missing.clients() == 4);
  // b left just now; the unhosted ids have been silent since the start.
  CHECK(missing.daemons[0].silent_s < 0.25);
  CHECK(missing.unhosted_silent_s >= 0.3);
  CHECK(missing.shortest_silence_s() == missing.daemons[0].silent_s);
  // The poll before a round asks for the silences alone: no client lists.
  const auto silences = registry.MissingNow(/*with_clients=*/false);
  REQUIRE(silences.daemons.size() == 1);
  CHECK(silences.daemons[0].clients.empty());
  CHECK(silences.shortest_silence_s() >= missing.shortest_silence_s());
  CHECK(registry.SilentSeconds(2) >= 0);
  CHECK(registry.SilentSeconds(2) < 0.25);

  LostDaemons soon(0.2);
  CHECK_FALSE(soon.MayGoOn(missing));
  CHECK_FALSE(soon.Lost(registry.SilentSeconds(2)));
  CHECK_FALSE(soon.Lost(-1));
  std::this_thread::sleep_for(std::chrono::milliseconds(250));
  CHECK(soon.MayGoOn(registry.MissingNow()));
  CHECK(soon.Lost(registry.SilentSeconds(2)));
  CHECK(LostDaemons(0).MayGoOn(registry.MissingNow()));
}

TEST_CASE("the book enters a lost daemon once and marks it back when it returns") {
  LostDaemons book(60);
  ClientRegistry::Missing m;
  m.daemons.push_back({"d2", {0, 10}, 61.5});
  auto fresh = book.Note(3, m);
  REQUIRE(fresh.size() == 1);
  CHECK(fresh[0].daemon == "d2");
  CHECK(fresh[0].round == 3);
  CHECK(fresh[0].silent_s == 61.5);
  CHECK(fresh[0].gone_at.size() == 20);  // 2026-11-27T05:40:12Z
  CHECK(fresh[0].gone_at.back() == 'Z');
  CHECK(book.Note(4, m).empty());  // still gone: entered once
  CHECK(book.Note(5, ClientRegistry::Missing{}).empty());  // back
  CHECK(book.Note(7, m).size() == 1);  // gone again: a second loss
  // A daemon registered but still loading (no feed yet) has not left.
  ClientRegistry::Missing joining = m;  // d2 still gone
  joining.daemons.push_back({"d9", {5}, 3.0, /*joined=*/false});
  CHECK(book.Note(8, joining).empty());
  const nlohmann::json j = book.ToJson();
  REQUIRE(j.size() == 2);  // d9 was never booked
  CHECK(j[0]["daemon"] == "d2");
  CHECK(j[0]["clients"] == nlohmann::json({0, 10}));
  CHECK(j[0]["round"] == 3);
  CHECK(j[0]["back_round"] == 5);
  CHECK(j[1]["round"] == 7);
  CHECK(j[1]["back_round"].is_null());
}

}  // namespace
}  // namespace shefl
