#include "common/core/rng.h"

#include <cmath>

namespace shefl {

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t DeriveSeed(uint64_t seed, SeedPurpose purpose,
                    std::initializer_list<uint64_t> tags) {
  uint64_t h = Mix64(seed ^ Mix64(static_cast<uint64_t>(purpose)));
  for (uint64_t t : tags) h = Mix64(h ^ Mix64(t + 0x632be59bd9b4e019ULL));
  return h;
}

uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n) {
  // Rejection sampling removes the modulo bias.
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do {
    r = rng();
  } while (r >= limit);
  return r % n;
}

double Uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

double StandardNormal(std::mt19937_64& rng) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double u1 = 1.0 - Uniform01(rng);  // (0, 1]: log is finite
  const double u2 = Uniform01(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

}  // namespace shefl
