#include "common/secure/fixed_point.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/core/rng.h"
#include "common/core/status_macros.h"

namespace shefl {

namespace {

absl::Status CheckScale(int scale_bits) {
  if (scale_bits < 0 || scale_bits > kMaxScaleBits)
    return absl::InvalidArgumentError(
        absl::StrCat("secure.scale_bits = ", scale_bits,
                     " is not in 0..", kMaxScaleBits));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckFixedPointConfig(uint32_t n, double clip, int scale_bits) {
  SHEFL_RETURN_IF_ERROR(CheckScale(scale_bits));
  if (!std::isfinite(clip) || clip <= 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "secure.clip = ", clip, " must be positive and finite"));
  if (n == 0)
    return absl::InvalidArgumentError("secure aggregation: no parties");
  // Exact in doubles: an integer product below 2^31 is representable, and
  // rounding is monotonic, so a product at or above 2^31 never rounds below.
  const double per_party = std::ceil(std::ldexp(clip, scale_bits));
  if (static_cast<double>(n) * per_party >= std::ldexp(1.0, 31))
    return absl::InvalidArgumentError(
        absl::StrCat("secure aggregation would overflow: ", n,
                     " parties x clip ", clip, " x 2^", scale_bits,
                     " reaches 2^31; lower secure.scale_bits "
                     "or secure.clip"));
  return absl::OkStatus();
}

absl::StatusOr<FixedPointEncoding> EncodeFixedPoint(absl::Span<const float> x,
                                                    double clip, int scale_bits,
                                                    std::mt19937_64& rng) {
  SHEFL_RETURN_IF_ERROR(CheckFixedPointConfig(1, clip, scale_bits));
  FixedPointEncoding out;
  out.q.resize(x.size());
  out.error.resize(x.size());
  const double scale = std::ldexp(1.0, scale_bits);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i]))
      return absl::InvalidArgumentError(
          absl::StrCat("fixed point: coordinate ", i, " is not finite"));
    const double v = std::clamp<double>(x[i], -clip, clip) * scale;
    const double low = std::floor(v);
    // Up with probability v - low, so E[q] = v exactly.
    const double q = low + (Uniform01(rng) < v - low ? 1.0 : 0.0);
    out.q[i] = static_cast<uint32_t>(static_cast<int64_t>(q));
    out.error[i] = static_cast<float>(static_cast<double>(x[i]) - q / scale);
  }
  return out;
}

absl::StatusOr<std::vector<float>> DecodeFixedPoint(
    absl::Span<const uint32_t> sum, int scale_bits) {
  SHEFL_RETURN_IF_ERROR(CheckScale(scale_bits));
  std::vector<float> out(sum.size());
  for (size_t i = 0; i < sum.size(); ++i)
    out[i] = static_cast<float>(std::ldexp(
        static_cast<double>(static_cast<int32_t>(sum[i])), -scale_bits));
  return out;
}

}  // namespace shefl
