// For tests of a daemon's secure-aggregation sessions
// (client/secure_sessions.h): the coordinator's setup message, deltas,
// the words and residuals a party must send and keep (computed here from
// common/secure/secure_input.h, as the party must), and a daemon's books,
// residuals and sessions.
// LibTorch's headers come before Catch (see tests/coordinator_harness.h).
#ifndef SHEFL_TESTS_SECURE_PARTY_SUPPORT_H_
#define SHEFL_TESTS_SECURE_PARTY_SUPPORT_H_

#ifdef CATCH_VERSION_MAJOR
#error "include tests/secure_party_support.h before <catch2/catch.hpp>"
#endif

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "client/daemon_metrics.h"
#include "client/residual_book.h"
#include "client/round_books.h"
#include "client/secure_sessions.h"
#include "common/secure/secure_input.h"
#include "common/sparse/index_set_codec.h"
#include "shefl.pb.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl::testing {

constexpr uint64_t kPartyDim = 16;
constexpr uint64_t kPartySeed = 7;
inline const std::vector<uint32_t> kPartySupport = {1, 4, 6, 9};

// The coordinator's setup of (round, model 0) for `party`: the support
// above, f = 24, c = 1, its clients' public weights.
inline v1::FeedMessage Setup(
    int64_t round, uint32_t party,
    const std::vector<std::pair<uint32_t, double>>& weights) {
  v1::FeedMessage m;
  v1::SecureSetup* s = m.mutable_secure_setup();
  s->set_round(static_cast<uint64_t>(round));
  s->set_model_id(0);
  s->set_party(party);
  auto support = EncodeIndexSet(kPartyDim, kPartySupport);
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

inline SecureEncoding PartyEncoding(int64_t round) {
  return {kPartySupport, 1.0, 24, kPartySeed, round, 0};
}

inline std::vector<float> Delta(float v) {
  return std::vector<float>(kPartyDim, v);
}

// A delta that differs at every coordinate; with `over`, coordinate 4 (on
// the support) lies beyond the clip.
inline std::vector<float> Ramp(float from, float step, bool over = false) {
  std::vector<float> d(kPartyDim);
  for (uint64_t i = 0; i < kPartyDim; ++i)
    d[i] = from + step * static_cast<float>(i);
  if (over) d[4] = 1.7f;
  return d;
}

// Adds what client `client` must add to its party's input `q` and turns
// `residual` into what it must keep.
inline void AddExpected(const std::vector<float>& delta, double weight,
                        uint32_t client, int64_t round,
                        std::vector<float>* residual, SecretWords* q) {
  REQUIRE(AddClientInput(delta, weight, client, PartyEncoding(round), residual,
                         q)
              .ok());
}

inline std::vector<uint32_t> Plain(const SecretWords& q) {
  return std::vector<uint32_t>(q.begin(), q.end());
}

// An input's words (little-endian on the wire).
inline std::vector<uint32_t> Words(const v1::SecureInput& in) {
  std::vector<uint32_t> w(in.words().size() / 4);
  std::memcpy(w.data(), in.words().data(), w.size() * 4);
  return w;
}

inline std::vector<float> ToFloats(const at::Tensor& t) {
  REQUIRE(t.defined());
  const at::Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(),
                            c.data_ptr<float>() + c.numel());
}

inline bool AllZero(const std::vector<uint8_t>& v) {
  return std::all_of(v.begin(), v.end(), [](uint8_t b) { return b == 0; });
}

// A daemon's books and residuals (in memory), and its sessions over them.
struct PartyDaemon {
  DaemonMetrics metrics{"secure_sessions_test"};
  TempDir dir;
  RoundBooks books{dir / "d.jsonl", "d", metrics.bytes(),
                   metrics.download_bytes()};
  ResidualBook residuals{"", 0};
  SecureSessions sessions;
  explicit PartyDaemon(bool masked) : sessions(Parts(masked)) {}
  SecureSessions::Parts Parts(bool masked) {
    SecureSessions::Parts p;
    p.name = "secure_sessions_test";
    p.books = &books;
    p.residuals = &residuals;
    p.dim = kPartyDim;
    p.seed = kPartySeed;
    p.masked = masked;
    return p;
  }
};

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_SECURE_PARTY_SUPPORT_H_
