// The fixed-point encoding of a party's update for secure aggregation: a
// weighted, clipped float vector x becomes words q = round(x * 2^f) mod
// 2^32 that add up, mod 2^32, to the encoding of the sum, and the sum
// decodes as int32 / 2^f. It is exact as long as no partial sum leaves the
// int32 range, which CheckFixedPointConfig guarantees for n parties.
// Rounding is stochastic (up with probability equal to the fraction), so
// the encoded value is unbiased; what rounding and clipping take off comes
// back as the error, for the caller's residual, so it is delayed, not lost.
// Thread-safe: free functions; the generator passed in is the caller's.
#ifndef SHEFL_COMMON_SECURE_FIXED_POINT_H_
#define SHEFL_COMMON_SECURE_FIXED_POINT_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace shefl {

// The largest scale: 2^30 * c must stay below 2^31 with room for rounding.
inline constexpr int kMaxScaleBits = 30;

// OK when n parties, each value clipped to [-clip, clip] and scaled by
// 2^scale_bits, cannot overflow int32 in any partial sum:
// n * ceil(clip * 2^f) < 2^31 (which implies n * c * 2^f < 2^31; the ceiling
// covers a value at the clip that rounds up). Otherwise InvalidArgument
// naming the config keys secure.scale_bits and
// secure.clip; also for n = 0, a clip that is not positive and
// finite, or a scale outside 0..30.
absl::Status CheckFixedPointConfig(uint32_t n, double clip, int scale_bits);

struct FixedPointEncoding {
  std::vector<uint32_t> q;   // the words, two's complement of the integers
  std::vector<float> error;  // x - decode(q), per coordinate
};

// Clips each x[i] to [-clip, clip] (the bound the overflow check relies on,
// whatever the caller did before) and rounds x[i] * 2^f stochastically with
// one Uniform01 draw of `rng` per coordinate, in order, so a seed gives one
// encoding. Refuses NaN or infinite values and what CheckFixedPointConfig
// refuses for one party.
absl::StatusOr<FixedPointEncoding> EncodeFixedPoint(absl::Span<const float> x,
                                                    double clip, int scale_bits,
                                                    std::mt19937_64& rng);

// A sum of encodings (mod 2^32) read as int32 / 2^f; InvalidArgument for a
// scale outside 0..30.
absl::StatusOr<std::vector<float>> DecodeFixedPoint(
    absl::Span<const uint32_t> sum, int scale_bits);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_FIXED_POINT_H_
