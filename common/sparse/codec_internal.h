// What the codec's three parts share (codec_size.cc, codec_encode.cc,
// codec_decode.cc): the header's size and little-endian fixed-width
// values. Internal to common/sparse. Pure functions; thread-safe.
#ifndef SHEFL_COMMON_SPARSE_CODEC_INTERNAL_H_
#define SHEFL_COMMON_SPARSE_CODEC_INTERNAL_H_

#include <cstdint>

#include "common/sparse/varint.h"

namespace shefl {
namespace codec_internal {

constexpr uint64_t kFixedHeaderBytes = 3;  // magic/version, type, format

inline uint64_t BitmapBytes(uint64_t d) { return (d + 7) / 8; }

inline uint64_t HeaderBytes(uint64_t d, uint64_t k) {
  return kFixedHeaderBytes + VarintLength(d) + VarintLength(k);
}

inline void PutU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

inline uint16_t GetU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

inline void PutU32(uint8_t* p, uint32_t v) {
  for (int b = 0; b < 4; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

inline uint32_t GetU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

}  // namespace codec_internal
}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_CODEC_INTERNAL_H_
