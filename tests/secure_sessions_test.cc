// A daemon's secure-aggregation sessions (client/secure_sessions.h).
// Against a recording stand-in for the coordinator
// (tests/fake_coordinator.h, in-process gRPC): what a party sends for each
// stage, and to whom, with the coordinator's part played by the
// collector of common/secure and two more parties; the input in clear
// (clear_support) and the residuals its answer settles; the diagnosis
// (secure.diagnose) sent in clear and ignored when masked; deltas that come
// before the setup; sessions whose round ended. And that a session wipes
// what it holds when it ends: the party's keys and seed, the input sum
// before masking, and the deltas that came before the setup, at the end
// of the round and at a new registration alike, seen through the
// sessions' probe, which is handed each ending session's secret bytes
// after its wipe and before its memory goes.
#include "client/secure_sessions.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/secure/collector.h"
#include "common/secure/party.h"
#include "common/secure/public_hashes.h"
#include "common/secure/support_diagnosis.h"
#include "common/secure_wire/secure_wire.h"
#include "shefl.grpc.pb.h"
#include "tests/fake_coordinator.h"
#include "tests/secure_party_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using testing::AddExpected;
using testing::AllZero;
using testing::Delta;
using testing::FakeCoordinator;
using testing::PartyDaemon;
using testing::Plain;
using testing::Ramp;
using testing::Setup;
using testing::ToFloats;
using testing::Words;
constexpr uint64_t kDim = testing::kPartyDim;
const std::vector<uint32_t>& kSupport = testing::kPartySupport;

TEST_CASE("a party answers each stage once its part is in, and its masked input unmasks to the sum") {
  FakeCoordinator fake;
  const CoordinatorLink link = fake.link();
  PartyDaemon d(/*masked=*/true);
  const int64_t round = 3;

  // The coordinator's side: the collector, and parties 5 and 30 beside
  // the daemon's party 21 (clients 21 and 22).
  CollectorSettings cs;
  cs.params.run_id = "run";
  cs.params.round = round;
  cs.params.model = 0;
  cs.params.scale_bits = 24;
  cs.params.clip = 1.0;
  auto support_hash = SupportHash(kSupport);
  auto model_hash = ModelHash(std::vector<float>(kDim, 0.5f));
  REQUIRE((support_hash.ok() && model_hash.ok()));
  cs.params.support_hash = *support_hash;
  cs.params.model_hash = *model_hash;
  cs.threshold = 2;
  cs.min_parties = 3;
  cs.words = kSupport.size();
  SecureCollector collector(cs);
  std::map<uint32_t, std::unique_ptr<SecureParty>> peers;
  for (uint32_t id : {5u, 30u}) {
    auto p = SecureParty::Create(id);
    REQUIRE(p.ok());
    REQUIRE(collector.AddAdvert((*p)->Advert()).ok());
    peers[id] = *std::move(p);
  }

  // Setup: the party's keys go up, and nothing else.
  // A setup that asks a masked party for the diagnosis (what a lying
  // coordinator would do to see the dense sums): it is ignored.
  v1::FeedMessage setup = Setup(round, 21, {{21, 1.0}, {22, 0.5}});
  setup.mutable_secure_setup()->set_diagnose(true);
  d.sessions.OnFeed(link, setup);
  std::vector<v1::SecureCall> calls = fake.secure_calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].session_id() == FakeCoordinator::kSessionId);
  CHECK(calls[0].round() == round);
  CHECK(calls[0].model_id() == 0);
  CHECK(calls[0].party() == 21);
  REQUIRE(calls[0].has_keys());
  CHECK(calls[0].keys().party() == 21);
  auto advert = FromProto(calls[0].keys());
  REQUIRE(advert.ok());
  REQUIRE(collector.AddAdvert(*advert).ok());

  // Roster: one share box for each other party, none for itself.
  auto roster = collector.CloseAdverts();
  REQUIRE(roster.ok());
  v1::FeedMessage rm;
  v1::SecureRoster* r = rm.mutable_secure_roster();
  r->set_round(round);
  r->set_model_id(0);
  r->set_run_id(roster->params.run_id);
  r->set_threshold(roster->params.t);
  r->set_support_hash(std::string(support_hash->begin(), support_hash->end()));
  r->set_model_hash(std::string(model_hash->begin(), model_hash->end()));
  for (const KeyAdvert& k : roster->keys) *r->add_keys() = ToProto(k);
  d.sessions.OnFeed(link, rm);
  calls = fake.secure_calls();
  REQUIRE(calls.size() == 2);
  REQUIRE(calls[1].has_boxes());
  CHECK(calls[1].party() == 21);
  CHECK(calls[1].boxes().round() == round);
  std::set<uint32_t> to;
  for (const v1::SecureBox& b : calls[1].boxes().boxes()) {
    CHECK(b.from() == 21);
    to.insert(b.to());
  }
  CHECK(to == std::set<uint32_t>{5, 30});
  CHECK(calls[1].boxes().boxes_size() == 2);
  auto boxes = BoxesFromProto(calls[1].boxes());
  REQUIRE(boxes.ok());
  REQUIRE(collector.AddBoxes(21, *boxes).ok());
  for (auto& [id, p] : peers) {
    auto b = p->ShareBoxes(*roster);
    REQUIRE(b.ok());
    REQUIRE(collector.AddBoxes(id, *b).ok());
  }
  REQUIRE(collector.CloseShares().ok());

  // The input waits for both of its clients and for the boxes addressed
  // to the party.
  const std::vector<float> d21 = Ramp(-0.3f, 0.04f, /*over=*/true);
  const std::vector<float> d22 = Ramp(0.5f, -0.05f);
  d.sessions.Contribute(link, round, 0, 21, d21);
  d.sessions.Contribute(link, round, 0, 22, d22);
  CHECK(fake.secure_calls().size() == 2);
  v1::FeedMessage bm;
  bm.mutable_secure_boxes()->set_round(round);
  AddBoxes(collector.BoxesFor(21), bm.mutable_secure_boxes());
  d.sessions.OnFeed(link, bm);
  calls = fake.secure_calls();
  REQUIRE(calls.size() == 3);
  REQUIRE(calls[2].has_input());
  CHECK(calls[2].party() == 21);
  CHECK(calls[2].input().weight() == 1.5);
  CHECK(calls[2].input().words().size() == 4 * kSupport.size());
  CHECK(calls[2].input().dense().empty());
  CHECK(calls[2].input().own_union().empty());
  auto input = FromProto(calls[2].input(), 21, kSupport.size());
  REQUIRE(input.ok());
  REQUIRE(collector.AddInput(*input).ok());

  // The peers' inputs: clients 5 (weight 0.25) and 30 (weight 1).
  SecretWords q21, q5, q30;
  std::vector<float> r21, r22, r5, r30;
  AddExpected(d21, 1.0, 21, round, &r21, &q21);
  AddExpected(d22, 0.5, 22, round, &r22, &q21);
  AddExpected(Ramp(0.1f, 0.01f), 0.25, 5, round, &r5, &q5);
  AddExpected(Ramp(-0.2f, 0.02f), 1.0, 30, round, &r30, &q30);
  CHECK(input->y != Plain(q21));  // masked
  for (auto& [id, p] : peers) {
    REQUIRE(p->TakeBoxes(collector.BoxesFor(id)).ok());
    auto y = p->Mask(id == 5 ? q5.view() : q30.view(), id == 5 ? 0.25 : 1.0);
    REQUIRE(y.ok());
    REQUIRE(collector.AddInput(*y).ok());
  }

  // Unmasking: the party's shares go up; with the peers' the sum is the
  // three inputs' exactly.
  auto request = collector.CloseInputs();
  REQUIRE(request.ok());
  v1::FeedMessage um;
  um.mutable_secure_unmask()->set_round(round);
  ToProto(*request, um.mutable_secure_unmask());
  d.sessions.OnFeed(link, um);
  calls = fake.secure_calls();
  REQUIRE(calls.size() == 4);
  REQUIRE(calls[3].has_shares());
  CHECK(calls[3].party() == 21);
  auto reply = FromProto(calls[3].shares(), 21);
  REQUIRE(reply.ok());
  REQUIRE(collector.AddReply(*reply).ok());
  for (auto& [id, p] : peers) {
    auto rep = p->Unmask(*request);
    REQUIRE(rep.ok());
    REQUIRE(collector.AddReply(*rep).ok());
  }
  auto sum = collector.Finish();
  REQUIRE(sum.ok());
  CHECK(sum->survivors == std::vector<uint32_t>{5, 21, 30});
  CHECK(sum->weight == 2.75);
  for (size_t j = 0; j < kSupport.size(); ++j)
    CHECK(sum->sum[j] == q21[j] + q5[j] + q30[j]);

  // Each client's residual: what its words did not carry (the clipped
  // 0.7 of coordinate 4 among it), kept once the input was accepted.
  CHECK(ToFloats(d.residuals.Newest(21, 0)) == r21);
  CHECK(ToFloats(d.residuals.Newest(22, 0)) == r22);
  CHECK(r21[4] == Approx(0.7f).margin(1e-6));
  CHECK(r21[0] == d21[0]);  // off the support: all of it
}

TEST_CASE("a clear_support party sends its clients' words and the answer settles their residuals") {
  FakeCoordinator fake;
  const CoordinatorLink link = fake.link();
  PartyDaemon d(/*masked=*/false);
  std::vector<float> r21, r22;

  // Round 3, accepted. No keys in clear: the setup alone sends nothing.
  d.sessions.OnFeed(link, Setup(3, 21, {{21, 1.0}, {22, 0.5}}));
  CHECK(fake.secure_calls().empty());
  const std::vector<float> d21 = Ramp(-0.3f, 0.04f, true), d22 = Ramp(0.5f, -0.05f);
  d.sessions.Contribute(link, 3, 0, 22, d22);
  CHECK(fake.secure_calls().empty());  // client 21 is not in yet
  d.sessions.Contribute(link, 3, 0, 21, d21);
  SecretWords q3;
  AddExpected(d21, 1.0, 21, 3, &r21, &q3);
  AddExpected(d22, 0.5, 22, 3, &r22, &q3);
  std::vector<v1::SecureCall> calls = fake.secure_calls();
  REQUIRE(calls.size() == 1);
  REQUIRE(calls[0].has_input());
  CHECK(calls[0].party() == 21);
  CHECK(calls[0].round() == 3);
  CHECK(calls[0].input().weight() == 1.5);
  CHECK(Words(calls[0].input()) == Plain(q3));
  const std::vector<float> kept21 = ToFloats(d.residuals.Newest(21, 0));
  CHECK(kept21 == r21);
  CHECK(ToFloats(d.residuals.Newest(22, 0)) == r22);

  // Round 4, refused: the words carry round 3's residual, and round 3's
  // is back in force after the refusal.
  fake.AnswerSecure([](const v1::SecureCall&) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "refused");
  });
  d.sessions.RoundEnded(3);
  d.sessions.OnFeed(link, Setup(4, 21, {{21, 1.0}}));
  d.sessions.Contribute(link, 4, 0, 21, Ramp(0.2f, 0.01f));
  std::vector<float> r21_4 = r21;
  SecretWords q4;
  AddExpected(Ramp(0.2f, 0.01f), 1.0, 21, 4, &r21_4, &q4);
  calls = fake.secure_calls();
  REQUIRE(calls.size() == 2);
  CHECK(Words(calls[1].input()) == Plain(q4));
  CHECK(ToFloats(d.residuals.Newest(21, 0)) == kept21);

  // Round 5, no answer (the coordinator went away): the staged residual
  // stays in force.
  fake.AnswerSecure([](const v1::SecureCall&) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "gone");
  });
  d.sessions.RoundEnded(4);
  d.sessions.OnFeed(link, Setup(5, 21, {{21, 1.0}}));
  d.sessions.Contribute(link, 5, 0, 21, Ramp(0.2f, 0.01f));
  std::vector<float> r21_5 = r21;
  SecretWords q5;
  AddExpected(Ramp(0.2f, 0.01f), 1.0, 21, 5, &r21_5, &q5);
  REQUIRE(fake.secure_calls().size() == 3);
  CHECK(ToFloats(d.residuals.Newest(21, 0)) == r21_5);
  CHECK(r21_5 != kept21);
}

TEST_CASE("a clear_support party asked for the diagnosis sends its dense sum and own top-k union") {
  FakeCoordinator fake;
  const CoordinatorLink link = fake.link();
  PartyDaemon d(/*masked=*/false);
  v1::FeedMessage setup = Setup(3, 21, {{21, 1.0}, {22, 0.5}});
  setup.mutable_secure_setup()->set_diagnose(true);
  for (auto& w : *setup.mutable_secure_setup()->mutable_weights()) w.set_k(3);
  d.sessions.OnFeed(link, setup);
  const std::vector<float> d21 = Ramp(-0.3f, 0.04f, true), d22 = Ramp(0.5f, -0.05f);
  d.sessions.Contribute(link, 3, 0, 22, d22);
  d.sessions.Contribute(link, 3, 0, 21, d21);
  SupportDiagnosis expected;
  AddClientDiagnosis(d22, {}, 0.5, 1.0, 3, &expected);
  AddClientDiagnosis(d21, {}, 1.0, 1.0, 3, &expected);
  const std::vector<v1::SecureCall> calls = fake.secure_calls();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].input().dense() == DenseBytes(expected));
  CHECK(calls[0].input().own_union() == UnionBytes(expected));
  CHECK(calls[0].input().dense().size() == 4 * kDim);
  CHECK_FALSE(expected.own_union.empty());
}

TEST_CASE("deltas that come before the setup wait for it, and a failed client adds nothing") {
  FakeCoordinator fake;
  const CoordinatorLink link = fake.link();
  PartyDaemon d(/*masked=*/false);

  // Client 21's delta, client 22's failure and a delta of client 23, whom
  // the setup will not name, all before the setup: nothing goes up.
  const std::vector<float> d21 = Ramp(-0.3f, 0.04f);
  d.sessions.Contribute(link, 3, 0, 21, d21);
  d.sessions.Contribute(link, 3, 0, 22, std::nullopt);
  d.sessions.Contribute(link, 3, 0, 23, Delta(0.9f));
  CHECK(fake.secure_calls().empty());
  CHECK(d.sessions.SecretBytesForTest(3, 0).size() == 2 * 4 * kDim);

  // The setup takes them in: the input holds client 21's words alone and
  // declares its weight alone.
  d.sessions.OnFeed(link, Setup(3, 21, {{21, 1.0}, {22, 0.5}}));
  std::vector<float> r21;
  SecretWords q;
  AddExpected(d21, 1.0, 21, 3, &r21, &q);
  std::vector<v1::SecureCall> calls = fake.secure_calls();
  REQUIRE(calls.size() == 1);
  REQUIRE(calls[0].has_input());
  CHECK(calls[0].input().weight() == 1.0);
  CHECK(Words(calls[0].input()) == Plain(q));
  CHECK_FALSE(d.residuals.Newest(22, 0).defined());
  CHECK_FALSE(d.residuals.Newest(23, 0).defined());

  // A repeat after the input went adds nothing and sends nothing.
  d.sessions.Contribute(link, 3, 0, 21, d21);
  CHECK(fake.secure_calls().size() == 1);

  // Every client failed: the party sends no input at all.
  d.sessions.OnFeed(link, Setup(4, 21, {{21, 1.0}, {22, 0.5}}));
  d.sessions.Contribute(link, 4, 0, 21, std::nullopt);
  d.sessions.Contribute(link, 4, 0, 22, std::nullopt);
  CHECK(fake.secure_calls().size() == 1);
}

TEST_CASE("a session whose round ended answers nothing more until a new registration") {
  FakeCoordinator fake;
  const CoordinatorLink link = fake.link();
  PartyDaemon d(/*masked=*/true);
  d.sessions.OnFeed(link, Setup(3, 21, {{21, 1.0}}));
  REQUIRE(fake.secure_calls().size() == 1);
  CHECK_FALSE(d.sessions.SecretBytesForTest(3, 0).empty());

  d.sessions.RoundEnded(3);
  CHECK(d.sessions.SecretBytesForTest(3, 0).empty());
  // Its stages, its deltas, its setup again and an earlier round's: none
  // is answered, and none makes a session.
  v1::FeedMessage roster;
  roster.mutable_secure_roster()->set_round(3);
  d.sessions.OnFeed(link, roster);
  d.sessions.Contribute(link, 3, 0, 21, Delta(0.2f));
  d.sessions.OnFeed(link, Setup(3, 21, {{21, 1.0}}));
  d.sessions.OnFeed(link, Setup(2, 21, {{21, 1.0}}));
  CHECK(fake.secure_calls().size() == 1);
  CHECK(d.sessions.SecretBytesForTest(3, 0).empty());
  CHECK(d.sessions.SecretBytesForTest(2, 0).empty());

  // A stage of a later round that comes without its setup is not
  // answered either; that round's setup is.
  v1::FeedMessage early_roster;
  early_roster.mutable_secure_roster()->set_round(5);
  d.sessions.OnFeed(link, early_roster);
  CHECK(fake.secure_calls().size() == 1);
  d.sessions.OnFeed(link, Setup(4, 21, {{21, 1.0}}));
  REQUIRE(fake.secure_calls().size() == 2);
  CHECK(fake.secure_calls()[1].round() == 4);

  // A new registration: a coordinator resumed from a checkpoint may run
  // round 3 again, and its setup is answered.
  d.sessions.NewSession();
  d.sessions.OnFeed(link, Setup(3, 21, {{21, 1.0}}));
  REQUIRE(fake.secure_calls().size() == 3);
  CHECK(fake.secure_calls()[2].round() == 3);
  CHECK(fake.secure_calls()[2].has_keys());
}

TEST_CASE("a daemon's secure session is wiped when it ends") {
  // A channel to nowhere: every call fails at once.
  auto stub = v1::Coordinator::NewStub(grpc::CreateChannel(
      "unix:/nonexistent/shefl-secure-sessions-test.sock",
      grpc::InsecureChannelCredentials()));
  const CoordinatorLink link{stub.get(), "session", ""};
  SecureSessions::Parts parts;
  parts.name = "secure_sessions_test";
  parts.dim = kDim;
  parts.seed = 7;
  SecureSessions sessions(parts);

  // Round 3: client 21's delta waits for the setup, which makes the party;
  // client 22's comes after it. Round 4: a delta before its setup.
  sessions.Contribute(link, 3, 0, 21, Delta(0.3f));
  sessions.OnFeed(link, Setup(3, 21, {{21, 1.0}, {22, 0.5}}));
  sessions.Contribute(link, 3, 0, 22, Delta(-0.7f));
  sessions.Contribute(link, 4, 0, 23, Delta(0.75f));
  const std::vector<uint8_t> round3 = sessions.SecretBytesForTest(3, 0);
  const std::vector<uint8_t> round4 = sessions.SecretBytesForTest(4, 0);
  // Two private keys and a seed, then q: one word per support coordinate.
  CHECK(round3.size() == 32 + 32 + 16 + 4 * kSupport.size());
  CHECK(std::count(round3.begin(), round3.end(), 0) < 16);
  CHECK(round4.size() == 4 * kDim);  // the waiting delta
  CHECK_FALSE(AllZero(round4));

  std::vector<std::vector<uint8_t>> ended;
  sessions.SetEndProbeForTest(
      [&ended](std::vector<uint8_t> bytes) { ended.push_back(std::move(bytes)); });
  sessions.RoundEnded(3);
  REQUIRE(ended.size() == 1);
  CHECK(ended[0].size() == round3.size());
  CHECK(AllZero(ended[0]));
  CHECK(sessions.SecretBytesForTest(3, 0).empty());    // gone
  CHECK(sessions.SecretBytesForTest(4, 0) == round4);  // not yet ended

  sessions.NewSession();
  REQUIRE(ended.size() == 2);
  CHECK(ended[1].size() == round4.size());
  CHECK(AllZero(ended[1]));
  CHECK(sessions.SecretBytesForTest(4, 0).empty());
}

}  // namespace
}  // namespace shefl
