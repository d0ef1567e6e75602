// For tests of secure aggregation's arithmetic through a real masked
// session (common/secure/collector.h, common/secure/party.h): n parties
// with their keys advertised and share boxes exchanged, ready for their
// inputs; then the unmasked sum of the survivors (every party here).
#ifndef SHEFL_TESTS_MASKED_SESSION_SUPPORT_H_
#define SHEFL_TESTS_MASKED_SESSION_SUPPORT_H_

#include <memory>
#include <vector>

#include "common/secure/collector.h"
#include "common/secure/party.h"
#include "common/secure/secure_input.h"

#include <catch2/catch.hpp>

namespace shefl::testing {

// Settings for a session of `encoding` (its words, f and c), min 2 parties.
inline CollectorSettings MaskedSettings(const SecureEncoding& encoding) {
  CollectorSettings s;
  s.params.run_id = "masked-session";
  s.params.round = static_cast<uint64_t>(encoding.round);
  s.params.model = encoding.model;
  s.params.scale_bits = static_cast<uint32_t>(encoding.scale_bits);
  s.params.clip = encoding.clip;
  s.min_parties = 2;
  s.words = encoding.words();
  return s;
}

class MaskedSession {
 public:
  MaskedSession(const SecureEncoding& encoding, uint32_t n)
      : collector_(MaskedSettings(encoding)) {
    for (uint32_t p = 0; p < n; ++p) {
      parties_.push_back(*SecureParty::Create(p));
      REQUIRE(collector_.AddAdvert(parties_.back()->Advert()).ok());
    }
    auto roster = collector_.CloseAdverts();
    REQUIRE(roster.ok());
    for (auto& p : parties_)
      REQUIRE(collector_.AddBoxes(p->id(), *p->ShareBoxes(*roster)).ok());
    REQUIRE(collector_.CloseShares().ok());
  }
  // Party p's masked input of q (its clients' weight `weight`).
  MaskedInput Mask(uint32_t p, const SecretWords& q, double weight) {
    REQUIRE(parties_[p]->TakeBoxes(collector_.BoxesFor(p)).ok());
    auto masked = parties_[p]->Mask(q, weight);
    REQUIRE(masked.ok());
    return *std::move(masked);
  }
  void Add(const MaskedInput& input) { REQUIRE(collector_.AddInput(input).ok()); }
  // Every party answers the unmasking; the sum.
  SecureSum Finish() {
    auto request = collector_.CloseInputs();
    REQUIRE(request.ok());
    for (auto& p : parties_) REQUIRE(collector_.AddReply(*p->Unmask(*request)).ok());
    auto sum = collector_.Finish();
    REQUIRE(sum.ok());
    return *std::move(sum);
  }

 private:
  SecureCollector collector_;
  std::vector<std::unique_ptr<SecureParty>> parties_;
};

}  // namespace shefl::testing

#endif  // SHEFL_TESTS_MASKED_SESSION_SUPPORT_H_
