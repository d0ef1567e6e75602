#include "common/fed/fixed_point_sum.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"

namespace shefl {
namespace {

constexpr double kUnscale = 1.0 / 1152921504606846976.0;  // 2^-60, exact

// The term rounded to the nearest multiple of 2^-60, ties to even (what
// nearbyint(term * 2^60) gives in the default rounding mode), from the
// double's bits: its 53-bit significand shifted into place. No libm or
// libgcc call: this runs once per value of every update.
__int128 ToFixed(double term) {
  uint64_t bits;
  std::memcpy(&bits, &term, sizeof bits);
  const int exp = static_cast<int>((bits >> 52) & 0x7ff);
  if (exp == 0) return 0;  // zero or subnormal: far below 2^-61
  const uint64_t mant = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);
  // term = mant * 2^(exp - 1075), so term * 2^60 = mant * 2^(exp - 1015).
  const int shift = exp - 1015;
  __int128 v;
  if (shift >= 0) {
    v = static_cast<__int128>(mant) << shift;  // shift <= 48: |term| <= 2^40
  } else if (shift <= -64) {
    v = 0;
  } else {
    const int s = -shift;
    uint64_t q = mant >> s;
    const uint64_t rest = mant & ((uint64_t{1} << s) - 1);
    const uint64_t half = uint64_t{1} << (s - 1);
    q += rest > half || (rest == half && (q & 1));
    v = q;
  }
  return (bits >> 63) ? -v : v;
}

}  // namespace

absl::Status FixedPointSum::Check(const SparseDelta& d, double weight) const {
  if (terms_ >= kMaxTerms)
    return absl::OutOfRangeError(absl::StrCat(
        "fixed-point sum already holds ", terms_, " updates (at most ",
        kMaxTerms, ")"));
  for (size_t i = 0; i < d.values.size(); ++i) {
    const double term = weight * static_cast<double>(d.values[i]);
    if (!(std::fabs(term) <= kMaxTerm))
      return absl::OutOfRangeError(absl::StrCat(
          "value ", d.values[i], " at index ", d.indices[i], " times weight ",
          weight, " is beyond the fixed-point sum's range (2^40)"));
  }
  return absl::OkStatus();
}

absl::Status FixedPointSum::Add(const SparseDelta& d, double weight) {
  SHEFL_RETURN_IF_ERROR(Check(d, weight));
  if (acc_.empty()) acc_.assign(dim_, 0);
  __int128* acc = acc_.data();
  const uint32_t* idx = d.indices.data();
  const float* val = d.values.data();
  for (size_t i = 0; i < d.indices.size(); ++i)
    acc[idx[i]] += ToFixed(weight * static_cast<double>(val[i]));
  ++terms_;
  return absl::OkStatus();
}

double FixedPointSum::Get(uint64_t index) const {
  if (acc_.empty()) return 0.0;
  return static_cast<double>(acc_[index]) * kUnscale;
}

}  // namespace shefl
