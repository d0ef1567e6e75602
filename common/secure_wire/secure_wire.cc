#include "common/secure_wire/secure_wire.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/secure/masks.h"
#include "common/secure/shamir_share.h"
#include "common/secure/share_box.h"

namespace shefl {
namespace {

std::string Str(ByteView v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

absl::StatusOr<std::map<uint32_t, ShamirShare>> SharesFrom(
    const google::protobuf::RepeatedPtrField<v1::SecureShare>& in,
    size_t secret_bytes, const char* what) {
  std::map<uint32_t, ShamirShare> out;
  for (const v1::SecureShare& s : in) {
    auto share = ParseShamirShare(AsBytes(s.share()), secret_bytes);
    if (!share.ok())
      return absl::InvalidArgumentError(absl::StrCat(
          what, " share of party ", s.party(), ": ", share.status().message()));
    if (!out.emplace(s.party(), *std::move(share)).second)
      return absl::InvalidArgumentError(
          absl::StrCat("two ", what, " shares of party ", s.party()));
  }
  return out;
}

void SharesTo(const std::map<uint32_t, ShamirShare>& in,
              google::protobuf::RepeatedPtrField<v1::SecureShare>* out) {
  for (const auto& [party, share] : in) {
    v1::SecureShare* s = out->Add();
    s->set_party(party);
    s->set_share(Str(SerializeShamirShare(share)));
  }
}

}  // namespace

v1::SecureKeys ToProto(const KeyAdvert& advert) {
  v1::SecureKeys k;
  k.set_party(advert.party);
  k.set_enc_public(Str(advert.enc_public));
  k.set_mask_public(Str(advert.mask_public));
  return k;
}

absl::StatusOr<KeyAdvert> FromProto(const v1::SecureKeys& keys) {
  KeyAdvert a;
  a.party = keys.party();
  auto enc = ToKey32(AsBytes(keys.enc_public()), "enc_public");
  if (!enc.ok()) return enc.status();
  auto mask = ToKey32(AsBytes(keys.mask_public()), "mask_public");
  if (!mask.ok()) return mask.status();
  a.enc_public = *enc;
  a.mask_public = *mask;
  return a;
}

void AddBoxes(const std::vector<ShareBox>& boxes, v1::SecureBoxes* out) {
  for (const ShareBox& b : boxes) {
    v1::SecureBox* p = out->add_boxes();
    p->set_from(b.from);
    p->set_to(b.to);
    p->set_box(Str(b.box));
  }
}

absl::StatusOr<std::vector<ShareBox>> BoxesFromProto(
    const v1::SecureBoxes& in) {
  std::vector<ShareBox> out;
  out.reserve(in.boxes_size());
  for (const v1::SecureBox& b : in.boxes()) {
    if (b.box().size() != kShareBoxBytes)
      return absl::InvalidArgumentError(
          absl::StrCat("share box from ", b.from(), " to ", b.to(), " has ",
                       b.box().size(), " bytes, not ", kShareBoxBytes));
    ByteView bytes = AsBytes(b.box());
    out.push_back({b.from(), b.to(), Bytes(bytes.begin(), bytes.end())});
  }
  return out;
}

namespace {

// Bytes of word i: `value_bytes` for the first `value_words`, 4 after.
uint64_t WireBytes(uint64_t words, uint64_t value_words, int value_bytes) {
  value_words = std::min(value_words, words);
  return value_words * value_bytes + (words - value_words) * 4;
}

}  // namespace

v1::SecureInput ToProto(const MaskedInput& input, uint64_t value_words,
                        int value_bits) {
  v1::SecureInput p;
  p.set_weight(input.weight);
  const int narrow = value_bits / 8;
  std::string words(WireBytes(input.y.size(), value_words, narrow), '\0');
  size_t at = 0;
  for (size_t i = 0; i < input.y.size(); ++i)
    for (int b = 0; b < (i < value_words ? narrow : 4); ++b)
      words[at++] = static_cast<char>((input.y[i] >> (8 * b)) & 0xff);
  p.set_words(std::move(words));
  return p;
}

absl::StatusOr<MaskedInput> FromProto(const v1::SecureInput& in,
                                      uint32_t party, uint64_t words,
                                      uint64_t value_words, int value_bits) {
  const int narrow = value_bits / 8;
  const uint64_t want = WireBytes(words, value_words, narrow);
  if (in.words().size() != want)
    return absl::InvalidArgumentError(absl::StrCat(
        "masked input of party ", party, " has ", in.words().size(),
        " bytes, not the ", want, " of ", words, " words"));
  MaskedInput m;
  m.party = party;
  m.weight = in.weight();
  m.y.resize(words);
  const auto* p = reinterpret_cast<const uint8_t*>(in.words().data());
  for (uint64_t i = 0; i < words; ++i) {
    const int n = i < value_words ? narrow : 4;
    uint32_t w = 0;
    for (int b = 0; b < n; ++b) w |= uint32_t{*p++} << (8 * b);
    m.y[i] = w;
  }
  return m;
}

void ToProto(const UnmaskRequest& request, v1::SecureUnmask* out) {
  for (uint32_t s : request.survivors) out->add_survivors(s);
  for (uint32_t d : request.dropped) out->add_dropped(d);
}

UnmaskRequest FromProto(const v1::SecureUnmask& in) {
  UnmaskRequest r;
  r.survivors.assign(in.survivors().begin(), in.survivors().end());
  r.dropped.assign(in.dropped().begin(), in.dropped().end());
  return r;
}

v1::SecureShares ToProto(const UnmaskReply& reply) {
  v1::SecureShares p;
  SharesTo(reply.seed_shares, p.mutable_seed_shares());
  SharesTo(reply.key_shares, p.mutable_key_shares());
  return p;
}

absl::StatusOr<UnmaskReply> FromProto(const v1::SecureShares& in,
                                      uint32_t party) {
  UnmaskReply r;
  r.party = party;
  auto seeds = SharesFrom(in.seed_shares(), kSelfSeedBytes, "seed");
  if (!seeds.ok()) return seeds.status();
  auto keys = SharesFrom(in.key_shares(), sizeof(Key32), "key");
  if (!keys.ok()) return keys.status();
  r.seed_shares = std::move(*seeds);
  r.key_shares = std::move(*keys);
  return r;
}

}  // namespace shefl
