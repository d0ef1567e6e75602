#include "common/secure/session_id.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/secure/sha256.h"

namespace shefl {

namespace {

constexpr char kDomain[] = "shefl sid v1";
constexpr char kGraphDomain[] = "shefl sid v2";

absl::Status CheckParams(const SessionParams& p,
                         const std::vector<uint32_t>& sorted) {
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    return absl::InvalidArgumentError(
        "session id: a party id repeats in the roster");
  if (p.n != sorted.size())
    return absl::InvalidArgumentError(absl::StrCat("session id: n = ", p.n,
                                                   " but the roster has ",
                                                   sorted.size(), " parties"));
  if (p.degree > 0 && (p.degree % 2 != 0 || p.degree + 1 >= p.n))
    return absl::InvalidArgumentError(absl::StrCat(
        "session id: degree = ", p.degree, " is not even and below n - 1 = ",
        p.n - 1, " (0: all pairs)"));
  if (p.t == 0 || p.t > ShareHolders(p))
    return absl::InvalidArgumentError(
        absl::StrCat("session id: t = ", p.t, " is not in 1..",
                     ShareHolders(p), " (the holders of each secret)"));
  if (!std::isfinite(p.clip) || p.clip <= 0)
    return absl::InvalidArgumentError(
        "session id: clip must be positive and finite");
  if (p.run_id.size() > UINT32_MAX)
    return absl::InvalidArgumentError("session id: run id too long");
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Bytes> EncodeSessionParams(const SessionParams& p) {
  std::vector<uint32_t> sorted = p.roster;
  std::sort(sorted.begin(), sorted.end());
  SHEFL_RETURN_IF_ERROR(CheckParams(p, sorted));
  Bytes out;
  AppendBytes(&out, AsBytes(p.degree > 0 ? kGraphDomain : kDomain));
  AppendBe32(&out, static_cast<uint32_t>(p.run_id.size()));
  AppendBytes(&out, AsBytes(p.run_id));
  AppendBe64(&out, p.round);
  AppendBe32(&out, p.model);
  AppendBe32(&out, static_cast<uint32_t>(sorted.size()));
  for (uint32_t id : sorted) AppendBe32(&out, id);
  AppendBe32(&out, p.n);
  AppendBe32(&out, p.t);
  AppendBe32(&out, p.scale_bits);
  uint64_t clip_bits;
  static_assert(sizeof clip_bits == sizeof p.clip);
  std::memcpy(&clip_bits, &p.clip, sizeof clip_bits);
  AppendBe64(&out, clip_bits);
  AppendBytes(&out, p.support_hash);
  AppendBytes(&out, p.model_hash);
  if (p.degree > 0) AppendBe32(&out, p.degree);
  return out;
}

absl::StatusOr<SessionId> MakeSessionId(const SessionParams& params) {
  SHEFL_ASSIGN_OR_RETURN(Bytes encoding, EncodeSessionParams(params));
  return Sha256(encoding);
}

}  // namespace shefl
