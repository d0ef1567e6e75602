#include "common/secure/shamir_share.h"

#include "absl/strings/str_cat.h"
#include "common/secure/gf61.h"

namespace shefl {

Bytes SerializeShamirShare(const ShamirShare& share) {
  Bytes out;
  out.reserve(4 + 8 * share.y.size());
  AppendBe32(&out, share.x);
  for (uint64_t e : share.y) AppendBe64(&out, e);
  return out;
}

absl::StatusOr<ShamirShare> ParseShamirShare(ByteView bytes,
                                             size_t secret_bytes) {
  if (secret_bytes == 0)
    return absl::InvalidArgumentError("Shamir share: empty secret");
  const size_t want = ShamirShareBytes(secret_bytes);
  if (bytes.size() != want)
    return absl::InvalidArgumentError(
        absl::StrCat("Shamir share: ", bytes.size(), " bytes, expected ", want,
                     " for a ", secret_bytes, "-byte secret"));
  ShamirShare share;
  share.x = ReadBe32(bytes.data());
  if (share.x == 0)
    return absl::InvalidArgumentError(
        "Shamir share: x = 0 (the point of the secret itself)");
  share.y.resize(ShamirChunks(secret_bytes));
  for (size_t c = 0; c < share.y.size(); ++c) {
    share.y[c] = ReadBe64(bytes.data() + 4 + 8 * c);
    if (share.y[c] >= kGf61Prime)
      return absl::InvalidArgumentError(absl::StrCat(
          "Shamir share: element ", c, " is not below p = 2^61 - 1"));
  }
  return share;
}

}  // namespace shefl
