// Seed derivation. Every random choice in shefl (partition, cohort,
// permutation, batch order, model init) draws from a generator seeded by
// DeriveSeed(run seed, purpose, ids...), so each process computes the same
// stream for the same purpose without talking to the others.
#ifndef SHEFL_COMMON_CORE_RNG_H_
#define SHEFL_COMMON_CORE_RNG_H_

#include <cstdint>
#include <initializer_list>
#include <random>

namespace shefl {

// Purposes, so that two uses of one seed never share a stream.
enum class SeedPurpose : uint64_t {
  kPartition = 1,
  kClusters = 2,
  kCohort = 3,
  kPermutation = 4,
  kModelInit = 5,
  kBatchOrder = 6,
  kSynthetic = 7,
  kTiers = 8,
  kSecureSupport = 9,   // secure aggregation's explored coordinates
  kSecureRounding = 10,  // a client's stochastic rounding to fixed point
};

// SplitMix64 finaliser: a bijective mix with good avalanche.
uint64_t Mix64(uint64_t x);

// A seed for (seed, purpose, tags...), stable across platforms and runs.
uint64_t DeriveSeed(uint64_t seed, SeedPurpose purpose,
                    std::initializer_list<uint64_t> tags = {});

inline std::mt19937_64 MakeRng(uint64_t seed, SeedPurpose purpose,
                               std::initializer_list<uint64_t> tags = {}) {
  return std::mt19937_64(DeriveSeed(seed, purpose, tags));
}

// Uniform integer in [0, n) from raw 64-bit draws (Lemire's method would
// do too); written out so results do not depend on the standard library's
// distribution implementation.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t n);

// Uniform double in [0, 1) from the top 53 bits of one draw.
double Uniform01(std::mt19937_64& rng);

// Standard normal by Box-Muller (one value per two draws), written out so
// that the result does not depend on the standard library.
double StandardNormal(std::mt19937_64& rng);

// Fisher-Yates with UniformBelow, for the same reason.
template <typename T>
void Shuffle(T& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    size_t j = static_cast<size_t>(UniformBelow(rng, i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_RNG_H_
