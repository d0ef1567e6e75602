// Arithmetic in the prime field GF(p), p = 2^61 - 1, the field of the
// Shamir shares. A Mersenne prime makes reduction two shifts and adds: for
// x = hi * 2^61 + lo, 2^61 = 1 (mod p), so x = hi + lo (mod p). A product of
// two elements fits an unsigned __int128 (122 bits), so nothing overflows.
// Elements are uint64_t values in [0, p); the functions expect such inputs.
// The shares and secrets are secret values, so the reductions do not
// branch on them: a conditional subtraction is a mask from the sign of the
// difference. (Gf61Pow branches on its exponent, which callers keep public.)
// Thread-safe: pure functions.
#ifndef SHEFL_COMMON_SECURE_GF61_H_
#define SHEFL_COMMON_SECURE_GF61_H_

#include <cstdint>

namespace shefl {

inline constexpr uint64_t kGf61Prime = (uint64_t{1} << 61) - 1;

// d + p when d "went below zero" (wrapped: its top bit set, as a
// difference of values below 2^62 does only then), else d.
inline uint64_t Gf61AddPIfWrapped(uint64_t d) {
  return d + (kGf61Prime & (uint64_t{0} - (d >> 63)));
}

// x mod p for any x below 2^122 (a product of two elements).
inline uint64_t Gf61Reduce(unsigned __int128 x) {
  uint64_t r = static_cast<uint64_t>(x & kGf61Prime) +
               static_cast<uint64_t>(x >> 61);  // < 2^62
  r = (r & kGf61Prime) + (r >> 61);             // <= p + 1
  return Gf61AddPIfWrapped(r - kGf61Prime);
}

inline uint64_t Gf61Add(uint64_t a, uint64_t b) {
  return Gf61AddPIfWrapped(a + b - kGf61Prime);  // a + b < 2p
}

inline uint64_t Gf61Sub(uint64_t a, uint64_t b) {
  return Gf61AddPIfWrapped(a - b);
}

inline uint64_t Gf61Mul(uint64_t a, uint64_t b) {
  return Gf61Reduce(static_cast<unsigned __int128>(a) * b);
}

// a^e by square and multiply.
uint64_t Gf61Pow(uint64_t a, uint64_t e);

// The inverse of a nonzero a, a^(p-2) (Fermat); 0 for a = 0, which callers
// rule out first (Lagrange denominators are differences of distinct x).
uint64_t Gf61Inverse(uint64_t a);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_GF61_H_
