#include "common/secure/shamir_share.h"

#include "absl/strings/str_cat.h"
#include "common/secure/gf61.h"
#include "common/secure/secret.h"

namespace shefl {
namespace {

void PutBe(uint64_t v, int bytes, uint8_t* p) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) p[i] = static_cast<uint8_t>(v);
}

}  // namespace

void ShamirShare::Wipe() { WipeBytes(y.data(), y.capacity() * sizeof(uint64_t)); }

// Wiped first: the assignment may free y's buffer or write a shorter
// share over it.
ShamirShare& ShamirShare::operator=(const ShamirShare& other) {
  if (this != &other) {
    Wipe();
    x = other.x;
    y = other.y;
  }
  return *this;
}

ShamirShare& ShamirShare::operator=(ShamirShare&& other) noexcept {
  if (this != &other) {
    Wipe();
    x = other.x;
    y = std::move(other.y);
  }
  return *this;
}

Bytes SerializeShamirShare(const ShamirShare& share) {
  Bytes out(4 + 8 * share.y.size());
  WriteShamirShare(share, absl::MakeSpan(out)).IgnoreError();  // sized above
  return out;
}

absl::Status WriteShamirShare(const ShamirShare& share, absl::Span<uint8_t> out) {
  if (out.size() != 4 + 8 * share.y.size())
    return absl::InvalidArgumentError(absl::StrCat(
        "Shamir share: ", out.size(), " bytes for a share of ", share.y.size(),
        " elements"));
  PutBe(share.x, 4, out.data());
  for (size_t c = 0; c < share.y.size(); ++c)
    PutBe(share.y[c], 8, out.data() + 4 + 8 * c);
  return absl::OkStatus();
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
