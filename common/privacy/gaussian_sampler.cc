#include "common/privacy/gaussian_sampler.h"

#include <cmath>

namespace shefl {

namespace {

uint64_t LittleEndian64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

constexpr double kTwoPi = 6.283185307179586476925286766559;
constexpr double kUlp53 = 1.0 / 9007199254740992.0;  // 2^-53

}  // namespace

void StandardNormalsFromBytes(const uint8_t* bytes, size_t n, double* out) {
  for (size_t i = 0; i < n; i += 2, bytes += 16) {
    const double u1 = static_cast<double>((LittleEndian64(bytes) >> 11) + 1) * kUlp53;
    const double u2 = static_cast<double>(LittleEndian64(bytes + 8) >> 11) * kUlp53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = r * std::cos(kTwoPi * u2);
    if (i + 1 < n) out[i + 1] = r * std::sin(kTwoPi * u2);
  }
}

}  // namespace shefl
