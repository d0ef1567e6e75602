#include "common/secure/bytes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace shefl {

void AppendBe32(Bytes* out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out->push_back(static_cast<uint8_t>(v >> shift));
}

void AppendBe64(Bytes* out, uint64_t v) {
  for (int shift = 56; shift >= 0; shift -= 8)
    out->push_back(static_cast<uint8_t>(v >> shift));
}

void AppendBytes(Bytes* out, ByteView v) {
  out->insert(out->end(), v.begin(), v.end());
}

uint32_t ReadBe32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | p[i];
  return v;
}

uint64_t ReadBe64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return v;
}

ByteView AsBytes(std::string_view s) {
  return ByteView(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string ToHex(ByteView v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * v.size());
  for (uint8_t b : v) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::StatusOr<Bytes> FromHex(std::string_view hex) {
  if (hex.size() % 2 != 0)
    return absl::InvalidArgumentError("hex: odd number of digits");
  Bytes out(hex.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return absl::InvalidArgumentError(
          absl::StrCat("hex: not a hex digit near offset ", 2 * i));
    out[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return out;
}

absl::StatusOr<Key32> ToKey32(ByteView v, std::string_view what) {
  Key32 k;
  if (v.size() != k.size())
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(what), ": expected ", k.size(), " bytes, got ", v.size()));
  std::copy(v.begin(), v.end(), k.begin());
  return k;
}

}  // namespace shefl
