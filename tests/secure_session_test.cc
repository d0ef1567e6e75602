// A whole secure-aggregation session (common/secure/party.h and
// collector.h) between n parties and the collector, in one process: the
// exact sum of the survivors whoever drops at whichever stage while t are
// left; the session abandoned, nothing revealed, with one more dropped;
// and the parties' refusals of requests that would reveal an input.
#include <algorithm>
#include <memory>
#include <random>
#include <set>

#include "common/core/status_macros.h"
#include "common/secure/collector.h"
#include "common/secure/fixed_point.h"
#include "common/secure/party.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr uint64_t kWords = 300;

enum Stage { kNone = 0, kKeys = 1, kShares = 2, kInput = 3, kReply = 4 };

struct Session {
  std::vector<std::unique_ptr<SecureParty>> parties;
  std::map<uint32_t, std::vector<uint32_t>> q;  // each party's encoded input
  SecureCollector collector;

  Session(uint32_t n, uint32_t threshold = 0)
      : collector(Settings(threshold)) {
    std::mt19937_64 rng(n * 7919 + threshold);
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t id = 100 + 3 * i;  // ids need not be 0..n-1
      auto p = SecureParty::Create(id);
      REQUIRE(p.ok());
      parties.push_back(std::move(*p));
      for (uint64_t w = 0; w < kWords; ++w) q[id].push_back(static_cast<uint32_t>(rng()));
    }
  }

  static CollectorSettings Settings(uint32_t threshold) {
    CollectorSettings s;
    s.params.run_id = "test-run";
    s.params.round = 4;
    s.params.model = 1;
    s.params.scale_bits = 24;
    s.params.clip = 1.0;
    s.threshold = threshold;
    s.words = kWords;
    return s;
  }
};

// Runs the session; parties in `drop` vanish before the stage named.
// Returns the collector's sum or the first refusal.
absl::StatusOr<SecureSum> Run(Session& s, const std::map<uint32_t, Stage>& drop) {
  auto gone = [&drop](uint32_t id, Stage st) {
    auto it = drop.find(id);
    return it != drop.end() && it->second <= st;
  };
  for (auto& p : s.parties)
    if (!gone(p->id(), kKeys)) REQUIRE(s.collector.AddAdvert(p->Advert()).ok());
  SHEFL_ASSIGN_OR_RETURN(auto roster, s.collector.CloseAdverts());
  for (auto& p : s.parties)
    if (!gone(p->id(), kShares)) {
      auto boxes = p->ShareBoxes(roster);
      REQUIRE(boxes.ok());
      REQUIRE(s.collector.AddBoxes(p->id(), std::move(*boxes)).ok());
    }
  SHEFL_ASSIGN_OR_RETURN(auto sharers, s.collector.CloseShares());
  for (auto& p : s.parties)
    if (!gone(p->id(), kInput)) {
      REQUIRE(p->TakeBoxes(s.collector.BoxesFor(p->id())).ok());
      auto y = p->Mask(s.q.at(p->id()), 1.5);
      REQUIRE(y.ok());
      REQUIRE(s.collector.AddInput(*y).ok());
    }
  SHEFL_ASSIGN_OR_RETURN(auto request, s.collector.CloseInputs());
  for (auto& p : s.parties)
    if (!gone(p->id(), kReply)) {
      auto reply = p->Unmask(request);
      REQUIRE(reply.ok());
      REQUIRE(s.collector.AddReply(*reply).ok());
    }
  return s.collector.Finish();
}

std::vector<uint32_t> PlainSum(const Session& s, const std::vector<uint32_t>& who) {
  std::vector<uint32_t> sum(kWords, 0);
  for (uint32_t id : who)
    for (uint64_t w = 0; w < kWords; ++w) sum[w] += s.q.at(id)[w];
  return sum;
}

// Three of ten parties, from the n - t = 3 the default t = 7 allows.
std::map<uint32_t, Stage> DropThree(Stage st) {
  return {{100, st}, {115, st}, {127, st}};
}

TEST_CASE("with nobody dropped the collector gets exactly the sum of the inputs") {
  Session s(10);
  auto sum = Run(s, {});
  REQUIRE(sum.ok());
  CHECK(s.collector.t() == 7u);
  CHECK(sum->survivors.size() == 10u);
  CHECK(sum->dropped.empty());
  CHECK(sum->weight == Approx(15.0));
  std::vector<uint32_t> all;
  for (auto& p : s.parties) all.push_back(p->id());
  CHECK(sum->sum == PlainSum(s, all));
}

TEST_CASE("30% of parties dropped at any stage: the exact sum of the survivors") {
  for (Stage st : {kKeys, kShares, kInput, kReply}) {
    INFO("dropped before stage " << st);
    Session s(10);
    auto sum = Run(s, DropThree(st));
    REQUIRE(sum.ok());
    std::vector<uint32_t> survivors;
    for (auto& p : s.parties)
      if (st == kReply || !DropThree(st).count(p->id())) survivors.push_back(p->id());
    CHECK(sum->survivors == survivors);
    CHECK(sum->sum == PlainSum(s, survivors));
    // Only those that sent shares and then no input need their key rebuilt.
    CHECK(sum->dropped.size() == (st == kInput ? 3u : 0u));
  }
}

TEST_CASE("one more dropped than n - t: the session is abandoned and nothing unmasked") {
  for (Stage st : {kShares, kInput, kReply}) {
    INFO("dropped before stage " << st);
    Session s(10);
    auto drop = DropThree(st);
    drop[103] = st;
    auto sum = Run(s, drop);
    CHECK(!sum.ok());
    CHECK(sum.status().code() == absl::StatusCode::kFailedPrecondition);
    if (st != kReply) {
      CHECK(s.collector.abandoned());
      CHECK(!s.collector.AddReply(UnmaskReply{}).ok());
    }
  }
  // Below secure.min_parties (5) no session starts at all.
  Session few(4);
  auto none = Run(few, {});
  REQUIRE(!none.ok());
  CHECK(std::string(none.status().message()).find("secure.min_parties") != std::string::npos);
}

TEST_CASE("a party refuses a request that would reveal an input") {
  Session s(6);
  for (auto& p : s.parties) REQUIRE(s.collector.AddAdvert(p->Advert()).ok());
  auto roster = s.collector.CloseAdverts();
  REQUIRE(roster.ok());
  CHECK(roster->params.t == 5u);
  for (auto& p : s.parties) {
    auto boxes = p->ShareBoxes(*roster);
    REQUIRE(boxes.ok());
    REQUIRE(s.collector.AddBoxes(p->id(), std::move(*boxes)).ok());
  }
  REQUIRE(s.collector.CloseShares().ok());
  for (auto& p : s.parties) {
    REQUIRE(p->TakeBoxes(s.collector.BoxesFor(p->id())).ok());
    REQUIRE(s.collector.AddInput(*p->Mask(s.q.at(p->id()), 1)).ok());
  }
  SecureParty& p = *s.parties[0];
  const std::vector<uint32_t> all = {100, 103, 106, 109, 112, 115};
  // Both the seed and the key of party 103: refused.
  auto both = p.Unmask({all, {103}});
  CHECK(both.status().code() == absl::StatusCode::kPermissionDenied);
  // Fewer survivors than t: refused.
  auto few = p.Unmask({{100, 103, 106, 109}, {112, 115}});
  CHECK(few.status().code() == absl::StatusCode::kPermissionDenied);
  // A first request answered; the same again too (a retry); then any
  // other one is refused: first survivors, then "dropped" would give a
  // survivor's key beside its seed.
  auto first = p.Unmask({{100, 103, 106, 109, 112}, {115}});
  REQUIRE(first.ok());
  CHECK(first->key_shares.count(115) == 1);
  CHECK(p.Unmask({{100, 103, 106, 109, 112}, {115}}).ok());
  CHECK(p.Unmask({{112, 109, 106, 103, 100}, {115}}).ok());  // same sets
  auto other = p.Unmask({{100, 103, 106, 109, 115}, {112}});
  CHECK(other.status().code() == absl::StatusCode::kPermissionDenied);
}

TEST_CASE("a party refuses a minority t, and to mask with fewer than t sharers") {
  Session s(6);
  for (auto& p : s.parties) REQUIRE(s.collector.AddAdvert(p->Advert()).ok());
  auto roster = s.collector.CloseAdverts();
  REQUIRE(roster.ok());
  REQUIRE(roster->params.t == 5u);
  // t = 3 of 6 is no majority: a coordinator lying to two halves could
  // collect one party's seed from one and its key from the other.
  Roster low = *roster;
  low.params.t = 3;
  auto refused = s.parties[0]->ShareBoxes(low);
  CHECK(refused.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK_THAT(std::string(refused.status().message()), Catch::Contains("t = 3 of n = 6"));
  // Nor does the collector make one.
  Session s3(6, 3);
  for (auto& p : s3.parties) REQUIRE(s3.collector.AddAdvert(p->Advert()).ok());
  CHECK_THAT(std::string(s3.collector.CloseAdverts().status().message()),
             Catch::Contains("not a majority"));

  for (auto& p : s.parties) {
    auto boxes = p->ShareBoxes(*roster);
    REQUIRE(boxes.ok());
    REQUIRE(s.collector.AddBoxes(p->id(), std::move(*boxes)).ok());
  }
  REQUIRE(s.collector.CloseShares().ok());
  // Three of its five peers' boxes reach party 100: with itself 4 sharers,
  // fewer than t = 5, so no t survivors could ever unmask its input.
  SecureParty& p = *s.parties[0];
  std::vector<ShareBox> boxes = s.collector.BoxesFor(p.id());
  REQUIRE(boxes.size() == 5u);
  REQUIRE(p.TakeBoxes(absl::MakeConstSpan(boxes).subspan(0, 3)).ok());
  auto few = p.Mask(s.q.at(p.id()), 1);
  CHECK(few.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(few.status().message()),
             Catch::Contains("4 parties shared with party 100") &&
                 Catch::Contains("fewer than t = 5"));
  REQUIRE(p.TakeBoxes(boxes).ok());
  CHECK(p.Mask(s.q.at(p.id()), 1).ok());
}

bool AllZero(const std::vector<uint8_t>& v) {
  return std::all_of(v.begin(), v.end(), [](uint8_t b) { return b == 0; });
}

TEST_CASE("a party's secrets are zero once it wipes them, and it answers no more") {
  Session s(5);
  REQUIRE(Run(s, {}).ok());
  // Its keys, its seed, its own shares and the four peers' shares.
  SecureParty& p = *s.parties[2];
  const std::vector<uint8_t> before = p.SecretBytesForTest();
  CHECK(before.size() == 32 + 32 + 16 + 5 * (3 + 5) * 8);
  CHECK(std::count(before.begin(), before.end(), 0) < static_cast<long>(before.size() / 8));
  p.Wipe();
  const std::vector<uint8_t> after = p.SecretBytesForTest();
  REQUIRE(after.size() == before.size());
  CHECK(AllZero(after));
  // Zeroed shares must not go out as answers.
  auto reply = p.Unmask({{100, 103, 106, 109, 112}, {}});
  CHECK(reply.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(reply.status().message()), Catch::Contains("wiped"));
}

TEST_CASE("a freed party leaves its secrets zero in the memory it gives back") {
  Session s(5);
  REQUIRE(Run(s, {{112, kInput}}).ok());  // 112 dropped: its key was rebuilt
  for (size_t i : {0, 4}) {  // a survivor, and the dropped party
    INFO("party " << s.parties[i]->id());
    const std::vector<uint8_t> before = s.parties[i]->SecretBytesForTest();
    REQUIRE(!AllZero(before));
    std::vector<uint8_t> seen;
    bool probed = false;
    s.parties[i]->SetDestroyProbeForTest([&](std::vector<uint8_t> bytes) {
      seen = std::move(bytes);
      probed = true;
    });
    s.parties[i].reset();
    REQUIRE(probed);
    CHECK(seen.size() == before.size());
    CHECK(AllZero(seen));
  }
}

TEST_CASE("boxes tampered with, or from another session, are refused") {
  Session a(5), b(5);
  for (Session* s : {&a, &b}) {
    for (auto& p : s->parties) REQUIRE(s->collector.AddAdvert(p->Advert()).ok());
  }
  auto ra = a.collector.CloseAdverts();
  REQUIRE(ra.ok());
  std::vector<std::vector<ShareBox>> sent;
  for (auto& p : a.parties) {
    auto boxes = p->ShareBoxes(*ra);
    REQUIRE(boxes.ok());
    sent.push_back(*boxes);
  }
  // Party 0 of a receives a box from party 1 with one bit flipped.
  std::vector<ShareBox> to0;
  for (const auto& boxes : sent)
    for (const ShareBox& box : boxes)
      if (box.to == a.parties[0]->id()) to0.push_back(box);
  REQUIRE(to0.size() == 4u);
  std::vector<ShareBox> tampered = to0;
  tampered[1].box[20] ^= 0x10;
  CHECK(a.parties[0]->TakeBoxes(tampered).code() == absl::StatusCode::kDataLoss);
  // A box relabelled as coming from another party is refused too.
  std::vector<ShareBox> relabelled = to0;
  std::swap(relabelled[0].from, relabelled[1].from);
  CHECK(!a.parties[0]->TakeBoxes(relabelled).ok());
  CHECK(a.parties[0]->TakeBoxes(to0).ok());
  // A roster that changes a party's keys is refused by that party, which
  // then takes the true one.
  auto rb = b.collector.CloseAdverts();
  REQUIRE(rb.ok());
  Roster forged = *rb;
  forged.keys[2].mask_public[0] ^= 1;
  CHECK(b.parties[2]->ShareBoxes(forged).status().code() ==
        absl::StatusCode::kPermissionDenied);
  CHECK(b.parties[2]->ShareBoxes(*rb).ok());
  // A box replayed from another session is refused (its keys and session
  // id are not this one's; secure_crypto_test binds a box to its id alone).
  CHECK(b.parties[0]->ShareBoxes(*rb).ok());
  std::vector<ShareBox> from_a;
  for (const ShareBox& box : to0)
    if (box.from == a.parties[2]->id()) from_a.push_back(box);
  REQUIRE(from_a.size() == 1u);
  CHECK(b.parties[0]->TakeBoxes(from_a).code() == absl::StatusCode::kDataLoss);
}

TEST_CASE("masked and plain fixed-point sums decode to the same floats") {
  // The encoding the daemons will use: weighted, clipped, stochastically
  // rounded inputs; the secure sum decodes bit for bit as the plain sum.
  Session s(7);
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (auto& [id, words] : s.q) {
    std::vector<float> x(kWords);
    for (float& v : x) v = normal(rng);
    auto enc = EncodeFixedPoint(x, 1.0, 24, rng);
    REQUIRE(enc.ok());
    words = enc->q;
  }
  auto sum = Run(s, {{106, kInput}});
  REQUIRE(sum.ok());
  auto secure = DecodeFixedPoint(sum->sum, 24);
  auto plain = DecodeFixedPoint(PlainSum(s, sum->survivors), 24);
  REQUIRE(secure.ok());
  REQUIRE(plain.ok());
  CHECK(*secure == *plain);
}

}  // namespace
}  // namespace shefl
