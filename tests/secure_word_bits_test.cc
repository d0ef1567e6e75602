// Secure aggregation in 16-bit words (secure.word_bits: 16;
// common/secure_wire/secure_wire.h, common/secure/secure_input.h): a
// masked input's K values go up in 2 bytes each (the word mod 2^16) and
// the vote's counts in 4; a receiver reads back exactly that, and refuses
// another length naming the bytes it wanted; and since reducing mod 2^16
// commutes with the sums and the masks, a masked session of 16-bit inputs
// unmasks, once its values are widened back to signed words, to the same
// update as the 32-bit session of the same inputs.
#include <random>

#include "common/secure/secure_input.h"
#include "common/secure_wire/secure_wire.h"
#include "tests/masked_session_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("16-bit words: values in 2 bytes, counts in 4, and back") {
  MaskedInput in{3, 0.5, {0x12345678u, 0xffff0001u, 7u, 0xaabbccddu, 0x01020304u}};
  const v1::SecureInput narrow = ToProto(in, 3, 16);
  CHECK(narrow.words().size() == 3 * 2 + 2 * 4);
  auto back = FromProto(narrow, 3, 5, 3, 16);
  REQUIRE(back.ok());
  CHECK(back->y == std::vector<uint32_t>{0x5678u, 0x0001u, 7u, 0xaabbccddu, 0x01020304u});
  CHECK(back->weight == 0.5);
  // 32 bits: every word whole, 4 bytes each.
  const v1::SecureInput wide = ToProto(in, 3, 32);
  CHECK(wide.words().size() == 20);
  CHECK(FromProto(wide, 3, 5, 3, 32)->y == in.y);
  CHECK(ToProto(in).words() == wide.words());
  // A 32-bit input where 16 bits were asked for has the wrong length.
  const auto refused = FromProto(wide, 3, 5, 3, 16);
  REQUIRE(!refused.ok());
  CHECK(refused.status().message().find("has 20 bytes, not the 14 of 5 words") !=
        std::string::npos);
}

TEST_CASE("16-bit words: widened back, the sign comes with them") {
  SecureEncoding e;
  e.support = {1, 2, 3};
  e.word_bits = 16;
  e.vote = {{0, 1, 1}};
  std::vector<uint32_t> sum = {0xfffeu, 0x7fffu, 0x18000u, 0xfffeu, 5u};
  WidenValueWords(e, &sum);
  CHECK(sum == std::vector<uint32_t>{0xfffffffeu, 0x7fffu, 0xffff8000u, 0xfffeu, 5u});
  e.word_bits = 32;
  std::vector<uint32_t> same = {0xfffeu, 1u, 2u, 3u, 4u};
  WidenValueWords(e, &same);
  CHECK(same == std::vector<uint32_t>{0xfffeu, 1u, 2u, 3u, 4u});
}

// The update of a masked session of four parties whose inputs travel in
// `bits`-bit words (f = 10, c = 1: 4 x 2^10 < 2^15).
std::vector<float> Session(int bits) {
  SecureEncoding e;
  for (uint32_t i = 0; i < 500; i += 3) e.support.push_back(i);
  e.clip = 1;
  e.scale_bits = 10;
  e.word_bits = bits;
  testing::MaskedSession session(e, 4);
  for (uint32_t p = 0; p < 4; ++p) {
    std::mt19937_64 rng(p);
    std::normal_distribution<float> normal(0.0f, 0.6f);  // some clipped
    std::vector<float> delta(500), residual;
    for (float& v : delta) v = normal(rng);
    SecretWords q;
    REQUIRE(AddClientInput(delta, 1.0, p, e, &residual, &q).ok());
    // Through the wire, as a daemon sends it and the coordinator reads it.
    auto read = FromProto(ToProto(session.Mask(p, q, 1.0), e.support.size(), bits),
                          p, e.words(), e.support.size(), bits);
    REQUIRE(read.ok());
    session.Add(*read);
  }
  SecureSum sum = session.Finish();
  WidenValueWords(e, &sum.sum);
  auto update = SecureUpdate(sum.sum, 4.0, e);
  REQUIRE(update.ok());
  return *update;
}

TEST_CASE("16-bit words: a masked session unmasks to the 32-bit session's update") {
  const std::vector<float> narrow = Session(16), wide = Session(32);
  CHECK(narrow == wide);
  bool negative = false;
  for (float v : narrow) negative = negative || v < 0;
  CHECK(negative);  // the sign survived the narrow words
}

}  // namespace
}  // namespace shefl
