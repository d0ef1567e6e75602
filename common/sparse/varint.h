// Unsigned LEB128 varints: 7 value bits a byte, least significant group
// first, high bit set on every byte but the last. Raw-pointer helpers so the
// codec's hot loops allocate nothing and check bounds once per value.
#ifndef SHEFL_COMMON_SPARSE_VARINT_H_
#define SHEFL_COMMON_SPARSE_VARINT_H_

#include <cstdint>

namespace shefl {

// Longest encoding of a uint64_t.
constexpr int kMaxVarint64Bytes = 10;

// Bytes LEB128 needs for v (1 for 0).
inline int VarintLength(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Same for a 32-bit value, branch-free so that sizing loops vectorise.
inline uint32_t VarintLength32(uint32_t v) {
  return 1u + (v >= (1u << 7)) + (v >= (1u << 14)) + (v >= (1u << 21)) +
         (v >= (1u << 28));
}

// Writes v at p and returns the byte after it. p needs room for
// VarintLength(v) bytes.
inline uint8_t* PutVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

enum class VarintResult {
  kOk,
  kTruncated,     // the input ended inside the varint
  kOverflow,      // more than max_bytes, or a value above the type's range
  kNonCanonical,  // a needless trailing zero group (e.g. 0x80 0x00)
};

// Reads a varint of at most max_bytes bytes (5 for uint32, 10 for uint64)
// whose value must not exceed max_value. Only the canonical (shortest)
// encoding is accepted, so every value has exactly one encoding and the
// encoded size stays a pure function of the values. On kOk, *p is advanced.
inline VarintResult GetVarint(const uint8_t** p, const uint8_t* end,
                              int max_bytes, uint64_t max_value,
                              uint64_t* value) {
  const uint8_t* q = *p;
  uint64_t v = 0;
  for (int i = 0; i < max_bytes; ++i) {
    if (q == end) return VarintResult::kTruncated;
    const uint8_t byte = *q++;
    const uint64_t group = byte & 0x7f;
    if (i == 9 && group > 1) return VarintResult::kOverflow;  // > 64 bits
    v |= group << (7 * i);
    if (!(byte & 0x80)) {
      if (i > 0 && group == 0) return VarintResult::kNonCanonical;
      if (v > max_value) return VarintResult::kOverflow;
      *value = v;
      *p = q;
      return VarintResult::kOk;
    }
  }
  return VarintResult::kOverflow;
}

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_VARINT_H_
