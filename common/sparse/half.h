// fp32 <-> IEEE binary16 (fp16) and bfloat16 conversions, in portable C++
// on bit patterns, so that the codec needs neither Torch nor a compiler's
// _Float16. Both narrowing conversions round to nearest, ties to even.
//
// The narrowing functions report overflow instead of producing an infinity:
// a finite fp32 value whose rounded result would be +-inf makes them return
// false. NaN/Inf inputs are the caller's to reject (they also return false).
// Values too small for the format round to a subnormal or to (signed) zero,
// as IEEE rounding does; that is not an error.
#ifndef SHEFL_COMMON_SPARSE_HALF_H_
#define SHEFL_COMMON_SPARSE_HALF_H_

#include <cstdint>
#include <cstring>

namespace shefl {

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

// True for +-inf and NaN (exponent bits all ones), on bits so that the
// check survives -ffast-math and vectorises.
inline bool FloatBitsNonFinite(uint32_t u) {
  return (u & 0x7f800000u) == 0x7f800000u;
}

// fp32 -> fp16, round to nearest even (after F. Giesen's
// float_to_half_fast3_rtne). Returns false on NaN/Inf input or overflow.
inline bool FloatToHalf(float f, uint16_t* out) {
  uint32_t u = FloatBits(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  if (u >= (127u + 16u) << 23) return false;  // |f| >= 65536, inf or NaN
  uint32_t h;
  if (u < 113u << 23) {  // below 2^-14: the result is subnormal or zero
    // Adding 0.5 aligns the 10 half mantissa bits at the bottom of the
    // float's mantissa; the FPU's own rounding (nearest even) does the rest.
    const uint32_t magic_bits = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    const float sum = BitsToFloat(u) + BitsToFloat(magic_bits);
    h = FloatBits(sum) - magic_bits;
  } else {
    const uint32_t mant_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
    h = u >> 13;
  }
  if (h >= 0x7c00u) return false;  // rounded up to infinity
  *out = static_cast<uint16_t>(h | (sign >> 16));
  return true;
}

// fp16 -> fp32, exact (every half is a float).
inline float HalfToFloat(uint16_t h) {
  const uint32_t shifted_exp = 0x7c00u << 13;
  uint32_t o = static_cast<uint32_t>(h & 0x7fffu) << 13;
  const uint32_t exp = o & shifted_exp;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {  // inf / NaN
    o += (128u - 16u) << 23;
  } else if (exp == 0) {  // zero / subnormal: renormalise through the FPU
    o += 1u << 23;
    o = FloatBits(BitsToFloat(o) - BitsToFloat(113u << 23));
  }
  return BitsToFloat(o | (static_cast<uint32_t>(h & 0x8000u) << 16));
}

// fp32 -> bf16 (the top 16 bits), round to nearest even. Returns false on
// NaN/Inf input or when rounding would overflow to infinity.
inline bool FloatToBfloat16(float f, uint16_t* out) {
  const uint32_t u = FloatBits(f);
  if (FloatBitsNonFinite(u)) return false;
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  const uint16_t b = static_cast<uint16_t>(rounded >> 16);
  if ((b & 0x7f80u) == 0x7f80u) return false;  // rounded up to infinity
  *out = b;
  return true;
}

// bf16 -> fp32, exact.
inline float Bfloat16ToFloat(uint16_t b) {
  return BitsToFloat(static_cast<uint32_t>(b) << 16);
}

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_HALF_H_
