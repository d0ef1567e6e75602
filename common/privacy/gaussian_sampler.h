// Standard normal draws from uniform random bytes, for the noise of
// differential privacy. The bytes come from a keyed stream (AES-256-CTR,
// server/source/central_privacy.cc), so the noise is as unpredictable as
// its key; this file only turns them into normals, the same way on every
// platform (no standard-library distribution).
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_PRIVACY_GAUSSIAN_SAMPLER_H_
#define SHEFL_COMMON_PRIVACY_GAUSSIAN_SAMPLER_H_

#include <cstddef>
#include <cstdint>

namespace shefl {

// The bytes StandardNormalsFromBytes reads for `n` normals: 16 for each
// pair (the last pair's second normal is dropped when n is odd).
inline size_t NormalBytesFor(size_t n) { return 16 * ((n + 1) / 2); }

// `n` standard normals into `out` by Box-Muller: each pair from two
// little-endian 64-bit words, their top 53 bits as u1 in (0, 1] and u2 in
// [0, 1): sqrt(-2 ln u1) (cos 2 pi u2, sin 2 pi u2). u1 never reaches 0,
// so the largest draw is sqrt(2 * 53 ln 2) = 8.57: the tail beyond that
// (probability 1e-17) is cut, which the accountant ignores.
// `bytes` holds NormalBytesFor(n) bytes.
void StandardNormalsFromBytes(const uint8_t* bytes, size_t n, double* out);

}  // namespace shefl

#endif  // SHEFL_COMMON_PRIVACY_GAUSSIAN_SAMPLER_H_
