#include "common/secure/masks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/secure/aes_ctr.h"
#include "common/secure/hkdf.h"
#include "common/secure/openssl_util.h"
#include "common/secure/x25519.h"

namespace shefl {

namespace {

constexpr char kSelfInfo[] = "shefl self";
constexpr char kPairInfo[] = "shefl mask";

// acc += sign * PRG(key) mod 2^32, sign being +1 or -1 (`subtract`).
absl::Status AddStream(const SecretKey32& key, bool subtract,
                       absl::Span<uint32_t> acc) {
  SHEFL_ASSIGN_OR_RETURN(SecretWords s, AesCtrWords(key, acc.size()));
  for (size_t i = 0; i < acc.size(); ++i)
    acc[i] += subtract ? -s[i] : s[i];
  return absl::OkStatus();
}

// Adds (or subtracts) the pairwise stream of (u, v), as u computes it.
absl::Status AddPairStream(ByteView u_private, const Key32& v_public,
                           uint32_t u, uint32_t v, const SessionId& sid,
                           bool subtract, absl::Span<uint32_t> acc) {
  SHEFL_ASSIGN_OR_RETURN(SecretKey32 key,
                         PairwiseMaskKey(u_private, v_public, u, v, sid));
  return AddStream(key, subtract, acc);
}

}  // namespace

absl::StatusOr<SelfSeed> GenerateSelfSeed() {
  SelfSeed b;
  SHEFL_RETURN_IF_ERROR(secure_internal::PrivateRandom(b.data(), b.size()));
  return b;
}

absl::StatusOr<SecretKey32> SelfMaskKey(const SelfSeed& b,
                                        const SessionId& sid) {
  return HkdfSha256Key(b, sid, AsBytes(kSelfInfo));
}

absl::StatusOr<SecretKey32> PairwiseMaskKey(ByteView own_private,
                                            ByteView peer_public, uint32_t u,
                                            uint32_t v, const SessionId& sid) {
  if (u == v)
    return absl::InvalidArgumentError(
        absl::StrCat("pairwise mask: a party (", u, ") paired with itself"));
  SHEFL_ASSIGN_OR_RETURN(SecretKey32 shared,
                         X25519SharedSecret(own_private, peer_public));
  Bytes info;
  AppendBytes(&info, AsBytes(kPairInfo));
  AppendBe32(&info, std::min(u, v));
  AppendBe32(&info, std::max(u, v));
  return HkdfSha256Key(shared, sid, info);
}

absl::StatusOr<std::vector<uint32_t>> MaskInput(
    absl::Span<const uint32_t> q, uint32_t u, const SelfSeed& b,
    ByteView own_private, const std::map<uint32_t, Key32>& peer_public,
    const SessionId& sid) {
  if (peer_public.count(u))
    return absl::InvalidArgumentError(
        absl::StrCat("mask: party ", u, " is among its own peers"));
  SecretWords y = SecretWords::CopyOf(q);
  SHEFL_ASSIGN_OR_RETURN(SecretKey32 self, SelfMaskKey(b, sid));
  SHEFL_RETURN_IF_ERROR(AddStream(self, false, y.span()));
  for (const auto& [v, v_public] : peer_public)
    SHEFL_RETURN_IF_ERROR(AddPairStream(own_private, v_public, u, v, sid,
                                        /*subtract=*/v < u, y.span()));
  return std::vector<uint32_t>(y.begin(), y.end());
}

absl::Status AddMasked(std::vector<uint32_t>* sum,
                       absl::Span<const uint32_t> y) {
  if (sum->empty()) sum->assign(y.size(), 0);
  if (sum->size() != y.size())
    return absl::InvalidArgumentError(
        absl::StrCat("masked sum: an upload of ", y.size(),
                     " words, the sum has ", sum->size()));
  for (size_t i = 0; i < y.size(); ++i) (*sum)[i] += y[i];
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> Unmask(
    absl::Span<const uint32_t> masked_sum,
    const std::map<uint32_t, SelfSeed>& survivor_seeds,
    const std::map<uint32_t, SecretKey32>& dropped_private,
    const std::map<uint32_t, Key32>& survivor_public, const SessionId& sid,
    const std::function<bool(uint32_t, uint32_t)>& paired) {
  for (const auto& [d, unused] : dropped_private)
    if (survivor_seeds.count(d))
      return absl::InvalidArgumentError(
          absl::StrCat("unmask: party ", d, " is both a survivor and dropped"));
  const bool same_parties =
      survivor_public.size() == survivor_seeds.size() &&
      std::equal(survivor_public.begin(), survivor_public.end(),
                 survivor_seeds.begin(), [](const auto& a, const auto& b) {
                   return a.first == b.first;
                 });
  if (!dropped_private.empty() && !same_parties)
    return absl::InvalidArgumentError(
        "unmask: the survivors' public keys and seeds name different parties");
  std::vector<uint32_t> sum(masked_sum.begin(), masked_sum.end());
  for (const auto& [u, b] : survivor_seeds) {
    SHEFL_ASSIGN_OR_RETURN(SecretKey32 self, SelfMaskKey(b, sid));
    SHEFL_RETURN_IF_ERROR(
        AddStream(self, /*subtract=*/true, absl::MakeSpan(sum)));
  }
  // u's upload holds +PRG(s_ud) when d > u and -PRG(s_ud) when d < u;
  // take away what it holds.
  for (const auto& [d, d_private] : dropped_private)
    for (const auto& [u, u_public] : survivor_public)
      if (!paired || paired(d, u))
        SHEFL_RETURN_IF_ERROR(AddPairStream(d_private, u_public, d, u, sid,
                                            /*subtract=*/d > u,
                                            absl::MakeSpan(sum)));
  return sum;
}

}  // namespace shefl
