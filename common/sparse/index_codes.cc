#include "common/sparse/index_codes.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "common/sparse/bit_io.h"

namespace shefl {
namespace {

// Bits a BitReader::Peek is sure to hold.
constexpr uint64_t kPeekBits = 57;

uint64_t WorstBits(uint64_t d, uint64_t k, unsigned b) {
  return k * (b + 1) + ((d - k) >> b);
}

absl::Status Truncated(const char* code, uint64_t need_bytes, uint64_t left,
                       uint64_t k) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "truncated index section (%s needs %s%d bytes for k=%d, %d left)", code,
      code[0] == 'G' ? "at least " : "", need_bytes, k, left));
}

absl::Status OutOfRange(uint64_t idx, uint64_t i, uint64_t d) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "index %d at position %d out of range [0, %d)", idx, i, d));
}

// The bits [from, to) of r are all zero, else the error naming the first
// set one (relative to the section's start) as `what`.
absl::Status CheckZeroBits(const BitReader& r, uint64_t from, uint64_t to,
                           const char* what) {
  for (uint64_t pos = from; pos < to; pos += kPeekBits) {
    const unsigned n = static_cast<unsigned>(std::min(kPeekBits, to - pos));
    const uint64_t w = r.Get(pos, n);
    if (w != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: bit %d of the index section is set", what,
          pos + __builtin_ctzll(w)));
    }
  }
  return absl::OkStatus();
}

// The unary part of a Golomb-Rice code at pos, whose first 57 bits w are
// all 0: the count of 0 bits before the next 1. Stops counting at the end
// of r's bytes (then pos + the count reaches r.size_bits(): truncated) or
// past max_q (the index would be out of range), so the work is bounded by
// the input.
uint64_t CountZeros(const BitReader& r, uint64_t pos, uint64_t max_q) {
  uint64_t q = 0, w = 0;
  while (w == 0) {
    q += kPeekBits;
    if (pos + q >= r.size_bits() || q > max_q) return q;
    w = r.Peek(pos + q);
  }
  return q + __builtin_ctzll(w);
}

}  // namespace

unsigned IndexCodeParameter(uint64_t d, uint64_t k) {
  if (k == 0) return 0;
  unsigned best = 0;
  uint64_t best_bits = WorstBits(d, k, 0);
  for (unsigned b = 1; b < 32; ++b) {
    const uint64_t bits = WorstBits(d, k, b);
    if (bits < best_bits) {
      best = b;
      best_bits = bits;
    }
  }
  return best;
}

uint64_t EliasFanoBits(uint64_t d, uint64_t k) {
  if (k == 0) return 0;
  return WorstBits(d, k, IndexCodeParameter(d, k));
}

uint64_t GolombRiceBits(const uint32_t* idx, size_t k, unsigned b) {
  uint64_t quotients = 0;
  uint32_t next = 0;  // idx_{i-1} + 1, or 0 before the first index
  for (size_t i = 0; i < k; ++i) {
    quotients += (idx[i] - next) >> b;
    next = idx[i] + 1;
  }
  return uint64_t{k} * (b + 1) + quotients;
}

uint8_t* WriteGolombRice(const uint32_t* idx, size_t k, unsigned b,
                         uint8_t* out) {
  BitWriter w(out);
  const uint32_t mask = static_cast<uint32_t>((uint64_t{1} << b) - 1);
  uint32_t next = 0;
  for (size_t i = 0; i < k; ++i) {
    const uint32_t gap = idx[i] - next;
    w.PutZeros(gap >> b);
    w.Put(1u | (uint64_t{gap & mask} << 1), b + 1);
    next = idx[i] + 1;
  }
  return w.Finish();
}

uint8_t* WriteEliasFano(const uint32_t* idx, size_t k, uint64_t d,
                        uint8_t* out) {
  if (k == 0) return out;
  const unsigned b = IndexCodeParameter(d, k);
  const uint32_t mask = static_cast<uint32_t>((uint64_t{1} << b) - 1);
  BitWriter w(out);
  if (b > 0) {
    for (size_t i = 0; i < k; ++i) w.Put((idx[i] - i) & mask, b);
  }
  uint64_t high = 0;  // x_{i-1} >> b
  for (size_t i = 0; i < k; ++i) {
    const uint64_t h = (uint64_t{idx[i]} - i) >> b;
    w.PutZeros(h - high);
    w.Put(1, 1);
    high = h;
  }
  // The upper part has k ones in k + ((d-k) >> b) bits; the last one is at
  // high + k - 1.
  w.PutZeros(((d - k) >> b) - high);
  return w.Finish();
}

absl::Status ReadGolombRice(const uint8_t* p, const uint8_t* end, uint64_t d,
                            uint64_t k, std::vector<uint32_t>* out,
                            uint64_t* section_bytes) {
  const unsigned b = IndexCodeParameter(d, k);
  const BitReader r(p, end);
  // Every code takes b + 1 bits at least: bounds the allocation.
  if (k * (b + 1) > r.size_bits()) {
    return Truncated("Golomb-Rice", BitsToBytes(k * (b + 1)),
                     static_cast<uint64_t>(end - p), k);
  }
  out->resize(k);
  uint32_t* o = out->data();
  const uint64_t max_q = d >> b;  // a larger quotient puts the index >= d
  const uint64_t mask = (uint64_t{1} << b) - 1;
  uint64_t pos = 0, next = 0;
  for (uint64_t i = 0; i < k; ++i) {
    const uint64_t w = r.Peek(pos);
    const uint64_t q = w != 0 ? __builtin_ctzll(w) : CountZeros(r, pos, max_q);
    if (pos + q >= r.size_bits()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "truncated index section (Golomb-Rice gap at position %d)", i));
    }
    if (q > max_q) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "index at position %d out of range [0, %d) (Golomb-Rice quotient "
          "above %d)",
          i, d, max_q));
    }
    uint64_t rem;
    if (q + 1 + b <= kPeekBits) {
      rem = (w >> (q + 1)) & mask;
    } else {
      rem = r.Get(pos + q + 1, b);
    }
    pos += q + 1 + b;
    if (pos > r.size_bits()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "truncated index section (Golomb-Rice gap at position %d)", i));
    }
    const uint64_t idx = next + (q << b) + rem;
    if (idx >= d) return OutOfRange(idx, i, d);
    o[i] = static_cast<uint32_t>(idx);
    next = idx + 1;
  }
  *section_bytes = BitsToBytes(pos);
  return CheckZeroBits(r, pos, *section_bytes * 8,
                       "non-zero padding after the Golomb-Rice index section");
}

absl::Status ReadEliasFano(const uint8_t* p, const uint8_t* end, uint64_t d,
                           uint64_t k, std::vector<uint32_t>* out,
                           uint64_t* section_bytes) {
  *section_bytes = BitsToBytes(EliasFanoBits(d, k));
  const uint64_t left = static_cast<uint64_t>(end - p);
  if (*section_bytes > left) {
    return Truncated("Elias-Fano", *section_bytes, left, k);
  }
  out->resize(k);
  if (k == 0) return absl::OkStatus();
  const unsigned b = IndexCodeParameter(d, k);
  const BitReader r(p, p + *section_bytes);  // zeros past the section
  const uint64_t upper = k * b;                       // where the ones start
  const uint64_t upper_end = upper + k + ((d - k) >> b);
  uint32_t* o = out->data();
  uint64_t pos = upper, prev_x = 0;
  for (uint64_t i = 0; i < k; ++i) {
    uint64_t w = r.Peek(pos);
    while (w == 0 && pos < upper_end) {
      pos += kPeekBits;
      w = r.Peek(pos);
    }
    pos += w == 0 ? 0 : __builtin_ctzll(w);
    if (w == 0 || pos >= upper_end) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Elias-Fano upper bits hold %d ones, header k=%d", i, k));
    }
    const uint64_t high = pos - upper - i;
    const uint64_t x = (high << b) | r.Get(i * b, b);
    if (x < prev_x) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "index %d at position %d not above its predecessor %d", x + i, i,
          prev_x + i - 1));
    }
    if (x > d - k) return OutOfRange(x + i, i, d);
    o[i] = static_cast<uint32_t>(x + i);
    prev_x = x;
    ++pos;
  }
  return CheckZeroBits(r, pos, *section_bytes * 8,
                       "Elias-Fano bits after the last index");
}

}  // namespace shefl
