// A daemon's secure-aggregation sessions (client/secure_sessions.h) wipe
// what they hold when they end: the party's keys and seed, the input sum
// before masking, and the deltas that came before the setup, at the end of
// the round and at a new registration alike. Seen through the sessions'
// probe, which is handed each ending session's secret bytes after its
// wipe and before its memory goes. No coordinator answers: the calls the
// stages make fail, which leaves the sessions as they were.
#include "client/secure_sessions.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "common/sparse/index_set_codec.h"
#include "shefl.grpc.pb.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr uint64_t kDim = 16;
const std::vector<uint32_t> kSupport = {1, 4, 6, 9};

v1::FeedMessage Setup(int64_t round, uint32_t party,
                      const std::vector<std::pair<uint32_t, double>>& weights) {
  v1::FeedMessage m;
  v1::SecureSetup* s = m.mutable_secure_setup();
  s->set_round(static_cast<uint64_t>(round));
  s->set_model_id(0);
  s->set_party(party);
  auto support = EncodeIndexSet(kDim, kSupport);
  REQUIRE(support.ok());
  s->set_support(*support);
  s->set_scale_bits(24);
  s->set_clip(1.0);
  for (const auto& [client, weight] : weights) {
    v1::SecureWeight* w = s->add_weights();
    w->set_client_id(client);
    w->set_weight(weight);
  }
  return m;
}

std::vector<float> Delta(float v) { return std::vector<float>(kDim, v); }

bool AllZero(const std::vector<uint8_t>& v) {
  return std::all_of(v.begin(), v.end(), [](uint8_t b) { return b == 0; });
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
