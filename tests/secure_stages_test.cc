// The coordinator's side of a secure session on the wire
// (server/state/secure_session.h), in one process: real parties
// (common/secure/party.h) answer the messages it sends down their feeds,
// in proto form, as daemons do. The sum it unmasks is the clear sum of the
// parties' inputs; a message of another stage, from a party outside the
// session, or with a weight above the plan's is refused whole; a party
// gone (or silent until the deadline) at a stage is left out, and one
// more than n - t gone abandons the session.
#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "common/secure/party.h"
#include "common/secure_wire/secure_wire.h"
#include "server/state/secure_session.h"
#include "shefl.pb.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using Clock = SecureSession::Clock;
constexpr uint32_t kWords = 64;

// n parties of one client each (ids 0..n-1), weight 1.
SecureModelPlan Plan(uint32_t n, uint32_t t) {
  SecureModelPlan p;
  p.dim = 1000;
  for (uint32_t j = 0; j < kWords; ++j) p.encoding.support.push_back(7 * j);
  p.encoding.clip = 1;
  p.encoding.scale_bits = 16;
  p.encoding.round = 3;
  p.encoding.model = 1;
  p.settings.params.run_id = "run";
  p.settings.params.round = 3;
  p.settings.params.model = 1;
  p.settings.params.scale_bits = 16;
  p.settings.params.clip = 1;
  p.settings.threshold = t;
  p.settings.min_parties = 3;
  p.settings.words = kWords;
  for (uint32_t i = 0; i < n; ++i) {
    SecurePartyPlan party;
    party.id = i;
    party.weights[i] = 1.0;
    p.parties.push_back(party);
  }
  return p;
}

// The daemons: each party's feed, and its answers as Secure calls.
struct Daemons {
  explicit Daemons(uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) parties.push_back(*SecureParty::Create(i));
  }
  SecureSession::Send Sender() {
    return [this](uint32_t p, const v1::FeedMessage& m) { feeds[p].push_back(m); };
  }
  v1::SecureCall Call(uint32_t p) {
    v1::SecureCall c;
    c.set_round(3);
    c.set_model_id(1);
    c.set_party(p);
    return c;
  }
  // Answers the newest message on p's feed.
  v1::SecureCall Answer(uint32_t p) {
    const v1::FeedMessage& m = feeds[p].back();
    v1::SecureCall c = Call(p);
    SecureParty& party = *parties[p];
    if (m.has_secure_setup()) {
      *c.mutable_keys() = ToProto(party.Advert());
    } else if (m.has_secure_roster()) {
      Roster r;
      const v1::SecureRoster& pr = m.secure_roster();
      r.params = {pr.run_id(), pr.round(), pr.model_id(), {},
                  static_cast<uint32_t>(pr.keys_size()), pr.threshold(), 16, 1.0};
      r.params.support_hash = *ToKey32(AsBytes(pr.support_hash()), "s");
      r.params.model_hash = *ToKey32(AsBytes(pr.model_hash()), "m");
      for (const auto& k : pr.keys()) {
        r.keys.push_back(*FromProto(k));
        r.params.roster.push_back(k.party());
      }
      AddBoxes(*party.ShareBoxes(r), c.mutable_boxes());
    } else if (m.has_secure_boxes()) {
      REQUIRE(party.TakeBoxes(*BoxesFromProto(m.secure_boxes())).ok());
      std::vector<uint32_t> q(kWords, 1000 * (p + 1));  // the clear input
      *c.mutable_input() = ToProto(*party.Mask(q, 1.0));
    } else {
      *c.mutable_shares() = ToProto(*party.Unmask(FromProto(m.secure_unmask())));
    }
    return c;
  }
  std::vector<std::unique_ptr<SecureParty>> parties;
  std::map<uint32_t, std::vector<v1::FeedMessage>> feeds;
};

const auto kNever = [](uint32_t) { return false; };

// Runs every stage with `gone` parties silent from stage `from` on (0:
// keys, 1: shares, 2: input, 3: unmask), closing each stage by Tick.
SecureSession::Outcome Drive(uint32_t n, uint32_t t, std::vector<uint32_t> gone,
                             int from) {
  Daemons d(n);
  SecureSession s(Plan(n, t), std::chrono::seconds(30),
                  Clock::now() + std::chrono::seconds(60), d.Sender());
  s.Start();
  auto is_gone = [&](uint32_t p) {
    return std::find(gone.begin(), gone.end(), p) != gone.end();
  };
  for (int stage = 0; stage < 4 && !s.done(); ++stage) {
    for (uint32_t p = 0; p < n; ++p) {
      if (d.feeds[p].size() != static_cast<size_t>(stage + 1)) continue;
      if (stage >= from && is_gone(p)) continue;
      REQUIRE(s.Take(d.Answer(p)).ok());
    }
    s.Tick(Clock::now(), [&](uint32_t p) { return stage >= from && is_gone(p); });
  }
  REQUIRE(s.done());
  return s.outcome();
}

TEST_CASE("secure stages: every party in, the sum is the clear sum") {
  const SecureSession::Outcome o = Drive(5, 0, {}, 0);
  REQUIRE(o.update);
  CHECK(o.survivors == 5);
  CHECK(o.clients == std::vector<int64_t>{0, 1, 2, 3, 4});
  // (1000 + ... + 5000) / 2^16 / mass 5, at every coordinate of C_t.
  REQUIRE(o.update->values.size() == kWords);
  for (float v : o.update->values) CHECK(v == static_cast<float>(15000.0 / 65536 / 5));
}

TEST_CASE("secure stages: a party gone at any stage is left out, one too many "
          "abandons") {
  for (int from = 0; from < 4; ++from) {
    INFO("gone from stage " << from);
    // n = 7, t = 5: two may go.
    const SecureSession::Outcome o = Drive(7, 5, {2, 6}, from);
    REQUIRE(o.update);
    if (from == 3) {  // both sent inputs: still survivors; 5 replies suffice
      CHECK(o.survivors == 7);
      CHECK(o.update->values[0] == static_cast<float>(28000.0 / 65536 / 7));
      continue;
    }
    CHECK(o.survivors == 5);
    CHECK(o.dropped == (from == 2 ? 2u : 0u));
    const double sum = 1000.0 * (1 + 2 + 4 + 5 + 6);
    CHECK(o.update->values[0] == static_cast<float>(sum / 65536 / 5));
    const SecureSession::Outcome bad = Drive(7, 5, {1, 2, 6}, from);
    CHECK_FALSE(bad.update);
    CHECK_FALSE(bad.why.empty());
  }
}

TEST_CASE("secure stages: wrong stage, unknown party, heavy weight are refused") {
  Daemons d(5);
  SecureSession s(Plan(5, 0), std::chrono::seconds(30),
                  Clock::now() + std::chrono::seconds(60), d.Sender());
  s.Start();
  v1::SecureCall early = d.Call(0);
  early.mutable_input()->set_weight(1);
  early.mutable_input()->set_words(std::string(4 * kWords, '\0'));
  CHECK(s.Take(early).code() == absl::StatusCode::kFailedPrecondition);
  v1::SecureCall stranger = d.Answer(0);
  stranger.set_party(9);
  CHECK(s.Take(stranger).code() == absl::StatusCode::kPermissionDenied);
  for (uint32_t p = 0; p < 5; ++p) REQUIRE(s.Take(d.Answer(p)).ok());
  // Keys all in: the roster went out; keys again are refused.
  CHECK(d.feeds[0].back().has_secure_roster());
  CHECK_FALSE(s.Take(d.Call(0)).ok());
  for (uint32_t p = 0; p < 5; ++p) REQUIRE(s.Take(d.Answer(p)).ok());
  v1::SecureCall heavy = d.Answer(0);
  heavy.mutable_input()->set_weight(2.0);  // its one client weighs 1
  CHECK(s.Take(heavy).code() == absl::StatusCode::kInvalidArgument);
  v1::SecureCall short_input = d.Call(1);
  short_input.mutable_input()->set_weight(1);
  short_input.mutable_input()->set_words("abc");
  CHECK(s.Take(short_input).code() == absl::StatusCode::kInvalidArgument);
  CHECK_FALSE(s.done());
  // The deadline closes a stage whoever is missing: 0 and 1 never sent.
  for (uint32_t p = 2; p < 5; ++p) REQUIRE(s.Take(d.Answer(p)).ok());
  s.Tick(Clock::now() + std::chrono::seconds(61), kNever);
  CHECK(s.done());
  CHECK_FALSE(s.outcome().update);  // 3 inputs, fewer than t = 4
}

}  // namespace
}  // namespace shefl
