// The bit-level index codes of the sparse-delta codec (common/sparse/codec.h):
// Golomb-Rice gaps and Elias-Fano. Both name k ascending, unique indices of
// [0, d) with one parameter b = IndexCodeParameter(d, k), a function of d
// and k only, so it is not sent and every index set has exactly one
// encoding in each code. Bit streams as common/sparse/bit_io.h lays them out.
//
// Golomb-Rice: for each gap g_i = idx_i - idx_{i-1} - 1 (g_0 = idx_0), the
//   quotient g_i >> b in unary (that many 0 bits, then a 1), then the low b
//   bits of g_i. Size k(b+1) + sum_i (g_i >> b) bits, data-dependent.
// Elias-Fano of x_i = idx_i - i (non-decreasing, in [0, d-k]): first the
//   low b bits of every x_i (k*b bits), then the upper bits: for each i,
//   (x_i >> b) - (x_{i-1} >> b) 0 bits and a 1 (x_{-1} = 0), then 0 bits up
//   to the fixed length k + ((d-k) >> b). Size k(b+1) + ((d-k) >> b) bits
//   whatever the set, which is also the most Golomb-Rice bits any k indices
//   of d can take (the sum of floors is at most the floor of the sum,
//   sum g_i <= d - k): Golomb-Rice is never longer than Elias-Fano.
// A section ends at the next byte boundary; the bits up to it are zero.
//
// b minimises that common worst case, k(b+1) + ((d-k) >> b) (smallest b on
// a tie); for uniform random sets it is also the b of least expected size
// (3 at density 0.1: 4.76 bits per index against the floor's 4.69).
//
// The readers are for untrusted input: they bound what they allocate by the
// bytes present, accept only the canonical stream (zero padding, exactly k
// upper ones, ascending indices), and say what is wrong in InvalidArgument.
#ifndef SHEFL_COMMON_SPARSE_INDEX_CODES_H_
#define SHEFL_COMMON_SPARSE_INDEX_CODES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"

namespace shefl {

// b for k indices of d (d <= 2^32, k <= d); 0 when k = 0. At most 31.
unsigned IndexCodeParameter(uint64_t d, uint64_t k);

// Bits of the Elias-Fano section for k of d (0 when k = 0), equal to the
// largest Golomb-Rice section any k indices of d can take.
uint64_t EliasFanoBits(uint64_t d, uint64_t k);

// Bits of the Golomb-Rice section of these indices with parameter b:
// k(b+1) + sum of (gap >> b). O(k).
uint64_t GolombRiceBits(const uint32_t* idx, size_t k, unsigned b);

inline uint64_t BitsToBytes(uint64_t bits) { return (bits + 7) / 8; }

// Write the section for idx[0..k) (ascending, unique, < d) at out, which
// has room for exactly BitsToBytes(size in bits) bytes; return the byte
// after the section.
uint8_t* WriteGolombRice(const uint32_t* idx, size_t k, unsigned b,
                         uint8_t* out);
uint8_t* WriteEliasFano(const uint32_t* idx, size_t k, uint64_t d,
                        uint8_t* out);

// Read a section of k indices of [0, d) that starts at p (input ends at
// end) into *out; *section_bytes is its length. InvalidArgument, its
// message naming the section and position, when the input is truncated,
// an index is out of range or not ascending, or the stream is not the
// canonical one.
absl::Status ReadGolombRice(const uint8_t* p, const uint8_t* end, uint64_t d,
                            uint64_t k, std::vector<uint32_t>* out,
                            uint64_t* section_bytes);
absl::Status ReadEliasFano(const uint8_t* p, const uint8_t* end, uint64_t d,
                           uint64_t k, std::vector<uint32_t>* out,
                           uint64_t* section_bytes);

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_INDEX_CODES_H_
