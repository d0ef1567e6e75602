// SecAgg+ sessions through the library (common/secure/collector.h and
// party.h with a neighbour graph): above graph_above parties the roster
// carries a degree, boxes go to neighbours only, and the exact sum of the
// survivors comes back whoever drops while every neighbourhood keeps t;
// a neighbourhood with fewer abandons the session and its party refuses to
// answer; the degree is in the session id.
#include <algorithm>
#include <memory>
#include <random>
#include <set>

#include "common/secure/collector.h"
#include "common/secure/party.h"
#include "common/secure/secagg_plus_params.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr uint64_t kWords = 40;

std::string HexOf(const Key32& k) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : k) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

CollectorSettings GraphSettings(uint32_t graph_above, uint32_t degree) {
  CollectorSettings s;
  s.params.run_id = "graph-run";
  s.params.round = 2;
  s.params.model = 0;
  s.params.scale_bits = 16;
  s.params.clip = 1.0;
  s.min_parties = 2;
  s.words = kWords;
  s.graph_above = graph_above;
  s.graph_degree = degree;
  return s;
}

struct GraphSession {
  std::vector<std::unique_ptr<SecureParty>> parties;
  std::map<uint32_t, std::vector<uint32_t>> q;
  SecureCollector collector;
  Roster roster;

  GraphSession(uint32_t n, CollectorSettings settings)
      : collector(std::move(settings)) {
    std::mt19937_64 rng(n);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t id = 10 + 2 * i;
      parties.push_back(*SecureParty::Create(id));
      for (uint64_t w = 0; w < kWords; ++w)
        q[id].push_back(static_cast<uint32_t>(rng()));
      REQUIRE(collector.AddAdvert(parties.back()->Advert()).ok());
    }
    auto r = collector.CloseAdverts();
    REQUIRE(r.ok());
    roster = *r;
  }
  SecureParty& party(uint32_t id) {
    for (auto& p : parties)
      if (p->id() == id) return *p;
    FAIL("no party " << id);
    return *parties[0];
  }
  std::vector<uint32_t> Neighbours(uint32_t id) const {
    auto g = SessionGraph(roster.params, collector.session_id());
    REQUIRE(g.ok());
    return *g->Neighbours(id);
  }
  // Boxes from everyone; inputs from all but `dropped`. The request.
  absl::StatusOr<UnmaskRequest> UpTo(const std::set<uint32_t>& dropped) {
    for (auto& p : parties) {
      auto boxes = p->ShareBoxes(roster);
      REQUIRE(boxes.ok());
      REQUIRE(boxes->size() == roster.params.degree);
      REQUIRE(collector.AddBoxes(p->id(), std::move(*boxes)).ok());
    }
    REQUIRE(collector.CloseShares().ok());
    for (auto& p : parties) {
      REQUIRE(p->TakeBoxes(collector.BoxesFor(p->id())).ok());
      if (dropped.count(p->id())) continue;
      auto y = p->Mask(q.at(p->id()), 1.0);
      REQUIRE(y.ok());
      REQUIRE(collector.AddInput(*y).ok());
    }
    return collector.CloseInputs();
  }
  std::vector<uint32_t> Expected(const std::set<uint32_t>& dropped) const {
    std::vector<uint32_t> sum(kWords, 0);
    for (const auto& [id, words] : q)
      if (!dropped.count(id))
        for (uint64_t w = 0; w < kWords; ++w) sum[w] += words[w];
    return sum;
  }
};

TEST_CASE("above graph_above the roster has a degree and boxes go to neighbours only") {
  GraphSession s(16, GraphSettings(8, 6));
  CHECK(s.roster.params.degree == 6u);
  CHECK(s.roster.params.t == 5u);  // floor(2 * 7 / 3) + 1
  auto request = s.UpTo({});
  REQUIRE(request.ok());
  for (auto& p : s.parties) {
    const auto boxes = s.collector.BoxesFor(p->id());
    std::vector<uint32_t> from;
    for (const ShareBox& b : boxes) from.push_back(b.from);
    std::sort(from.begin(), from.end());
    CHECK(from == s.Neighbours(p->id()));
    auto reply = p->Unmask(*request);
    REQUIRE(reply.ok());
    CHECK(reply->seed_shares.size() == 7u);  // its neighbours and itself
    REQUIRE(s.collector.AddReply(*reply).ok());
  }
  auto sum = s.collector.Finish();
  REQUIRE(sum.ok());
  CHECK(sum->sum == s.Expected({}));
}

TEST_CASE("at or below graph_above, and at a degree of n - 1, the session is all pairs") {
  GraphSession at(8, GraphSettings(8, 4));
  CHECK(at.roster.params.degree == 0u);
  GraphSession wide(8, GraphSettings(4, 8));
  CHECK(wide.roster.params.degree == 0u);
  CHECK(wide.roster.params.t == 6u);  // floor(2 * 8 / 3) + 1 of all 8
}

TEST_CASE("dropped parties within every neighbourhood's t leave the survivors' exact sum") {
  CollectorSettings settings = GraphSettings(8, 8);
  settings.threshold = 5;  // the least majority of the 9 holders
  GraphSession s(20, settings);
  REQUIRE(s.roster.params.t == 5u);
  // Three parties, no two of them neighbours, drop, and one survivor never
  // replies: each holder set of 9 loses at most 4.
  const uint32_t a = s.parties[0]->id();
  const auto na = s.Neighbours(a);
  uint32_t b = 0, c = 0;
  for (auto& p : s.parties) {
    const uint32_t id = p->id();
    if (id == a || std::binary_search(na.begin(), na.end(), id)) continue;
    if (b == 0) {
      b = id;
    } else {
      const auto nb = s.Neighbours(b);
      if (id != b && !std::binary_search(nb.begin(), nb.end(), id)) {
        c = id;
        break;
      }
    }
  }
  REQUIRE(c != 0);
  const std::set<uint32_t> dropped{a, b, c};
  auto request = s.UpTo(dropped);
  REQUIRE(request.ok());
  CHECK(request->dropped == std::vector<uint32_t>(dropped.begin(), dropped.end()));
  // One survivor replies not at all: its secrets' other holders suffice.
  bool skipped = false;
  for (auto& p : s.parties) {
    if (dropped.count(p->id())) continue;
    if (!skipped) {
      skipped = true;
      continue;
    }
    auto reply = p->Unmask(*request);
    REQUIRE(reply.ok());
    REQUIRE(s.collector.AddReply(*reply).ok());
  }
  auto sum = s.collector.Finish();
  REQUIRE(sum.ok());
  CHECK(sum->sum == s.Expected(dropped));
}

TEST_CASE("a neighbourhood left with fewer than t abandons the session, and its party will not answer") {
  GraphSession s(16, GraphSettings(8, 6));  // t = 5 of 7 holders
  const uint32_t a = s.parties[0]->id();
  const auto na = s.Neighbours(a);
  // Three of a's six neighbours drop: a's seed has 4 surviving holders.
  const std::set<uint32_t> dropped(na.begin(), na.begin() + 3);
  auto request = s.UpTo(dropped);
  REQUIRE_FALSE(request.ok());
  CHECK_THAT(std::string(request.status().message()),
             Catch::Contains("4 surviving holders, fewer than t = 5"));
  CHECK(s.collector.abandoned());
  // A coordinator that asks anyway gets nothing from a.
  UnmaskRequest forged;
  for (auto& p : s.parties)
    (dropped.count(p->id()) ? forged.dropped : forged.survivors).push_back(p->id());
  auto refused = s.party(a).Unmask(forged);
  CHECK(refused.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(refused.status().message()),
             Catch::Contains("4 survivors among the holders of party"));
}

TEST_CASE("a party takes no box from a non-neighbour, and the collector no box to one") {
  GraphSession s(16, GraphSettings(8, 6));
  const uint32_t a = s.parties[0]->id();
  const auto na = s.Neighbours(a);
  uint32_t stranger = 0;
  for (auto& p : s.parties)
    if (p->id() != a && !std::binary_search(na.begin(), na.end(), p->id()))
      stranger = p->id();
  REQUIRE(stranger != 0);
  REQUIRE(s.party(a).ShareBoxes(s.roster).ok());
  auto boxes = s.party(stranger).ShareBoxes(s.roster);
  REQUIRE(boxes.ok());
  // The stranger seals one more box, to a, as if it were all pairs.
  std::vector<ShareBox> extra = *boxes;
  extra.push_back(ShareBox{stranger, a, (*boxes)[0].box});
  CHECK(s.collector.AddBoxes(stranger, extra).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(s.party(a).TakeBoxes({ShareBox{stranger, a, (*boxes)[0].box}}).ok());
}

TEST_CASE("the finder's degree is used above graph_above, its t a majority of the holders") {
  CollectorSettings settings = GraphSettings(100, 0);
  settings.collude_fraction = 0.05;
  settings.dropout_fraction = 0.05;
  const auto g = FindGraphParams(400, 0.05, 0.05, 40, 20, /*majority=*/true);
  REQUIRE(g.ok());
  REQUIRE_FALSE(g->complete());
  CHECK(g->threshold >= (g->degree + 1) / 2 + 1);
  CHECK(g->threshold <= g->degree);
  SecureCollector c(settings);
  for (uint32_t id = 0; id < 400; ++id)
    REQUIRE(c.AddAdvert(KeyAdvert{id, {}, {}}).ok());
  auto roster = c.CloseAdverts();
  REQUIRE(roster.ok());
  CHECK(roster->params.degree == static_cast<uint32_t>(g->degree));
  CHECK(roster->params.t == static_cast<uint32_t>(g->threshold));
  // The majority raises t at gamma = 0.05 and then needs a larger degree
  // for the same failure bound, never a smaller one.
  const auto plain = FindGraphParams(1000, 0.05, 1.0 / 3);
  const auto raised = FindGraphParams(1000, 0.05, 1.0 / 3, 40, 20, true);
  REQUIRE(plain.ok());
  REQUIRE(raised.ok());
  CHECK(raised->threshold >= (raised->degree + 1) / 2 + 1);
  CHECK(raised->degree > plain->degree);
  CHECK(raised->degree < 999);
}

TEST_CASE("the session id covers the degree, and all pairs keep the v1 bytes") {
  SessionParams p;
  p.run_id = "r";
  p.roster = {1, 2, 3, 4, 5, 6, 7, 8};
  p.n = 8;
  p.t = 3;
  p.clip = 1;
  auto v1 = EncodeSessionParams(p);
  REQUIRE(v1.ok());
  CHECK(std::string(v1->begin(), v1->begin() + 12) == "shefl sid v1");
  p.degree = 4;
  auto v2 = EncodeSessionParams(p);
  REQUIRE(v2.ok());
  CHECK(std::string(v2->begin(), v2->begin() + 12) == "shefl sid v2");
  CHECK(v2->size() == v1->size() + 4);
  CHECK(*MakeSessionId(p) != *MakeSessionId([&] {
    SessionParams q = p;
    q.degree = 2;
    return q;
  }()));
  for (uint32_t bad : {3u, 7u, 8u}) {
    p.degree = bad;
    CHECK_THAT(std::string(EncodeSessionParams(p).status().message()),
               Catch::Contains("degree = " + std::to_string(bad)));
  }
  p.degree = 2;
  p.t = 4;  // above the 3 holders of each secret
  CHECK_THAT(std::string(EncodeSessionParams(p).status().message()),
             Catch::Contains("t = 4 is not in 1..3"));
}

TEST_CASE("a pinned SecAgg+ session id and its graph are the Python party's") {
  // Computed by the Python party (python/shefl_client/secure), a second
  // implementation of the same encoding and graph.
  SessionParams p;
  p.run_id = "graph-kat";
  p.round = 3;
  p.model = 1;
  p.roster = {1, 2, 3, 4, 5, 6, 7, 8};
  p.n = 8;
  p.t = 4;
  p.scale_bits = 16;
  p.clip = 1.0;
  p.degree = 4;
  auto sid = MakeSessionId(p);
  REQUIRE(sid.ok());
  CHECK(HexOf(*sid) ==
        "2af7c063bb3b22494dbcdf10922226cef51f89729bdf1f13b4eb383b43dfedc9");
  auto g = SessionGraph(p, *sid);
  REQUIRE(g.ok());
  CHECK(g->ring() == std::vector<uint32_t>{3, 6, 7, 2, 4, 5, 8, 1});
}

}  // namespace
}  // namespace shefl
