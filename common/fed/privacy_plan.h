// What differential privacy (privacy.*) needs from the rest of the config:
// the refusals of what it cannot go with, each naming its key, and the
// figures the accountant reads from it (each tier's sampling rate, delta,
// the count noise of adaptive clipping). Pure functions; thread-safe.
#ifndef SHEFL_COMMON_FED_PRIVACY_PLAN_H_
#define SHEFL_COMMON_FED_PRIVACY_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "common/core/config.h"
#include "common/fed/methods/config_resolution.h"

namespace shefl {

// One group of clients sampled at one rate: the HPCs and the LPCs under a
// tiered method, everyone otherwise.
struct SampledTier {
  std::string name;     // "hpc", "lpc" or "all"
  int64_t clients = 0;  // N of the tier
  int64_t cohort = 0;   // how many of them a round samples
  double q = 0;         // cohort / clients
};

// The tiers with at least one client. The accountant treats each round as
// Poisson sampling at q (docs/PRIVACY.md says how the fixed-size cohort
// relates); over_selection's extra draws count as sampled.
std::vector<SampledTier> PrivacyTiers(const ExperimentConfig& c);

// privacy.delta, or 1 / N^1.1 when it is 0.
double PrivacyDelta(const ExperimentConfig& c);

// sigma_b of adaptive clipping: privacy.count_noise, or the expected
// cohort / 20 (Andrew et al.'s choice) when it is 0.
double ClipCountNoise(const ExperimentConfig& c);

// The noise multiplier of the updates' sum: z itself, or with adaptive
// clipping (z^-2 - (2 sigma_b)^-2)^-1/2, so that the sum and the centred
// count together cost what one Gaussian of multiplier z costs.
double UpdateNoiseMultiplier(const ExperimentConfig& c);

// privacy.mode distributed: the t a session of n parties is run with,
// secure.threshold or floor(2n/3) + 1 (a session never unmasks fewer).
int64_t PlannedThreshold(const ExperimentConfig& c, int64_t n);

// privacy.mode distributed: the variance of the Skellam noise each party
// adds per word of a session of K support words and threshold t, so that
// any t survivors together reach (z D2)^2, D2 = S 2^f + sqrt(M K) (one
// client's round in integer units, rounding included).
double PartyNoiseVariance(const ExperimentConfig& c, uint64_t k, int64_t t);

// The refusals (config_load.cc calls it once the method's presets are in).
void CheckPrivacy(ConfigResolution& r);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_PRIVACY_PLAN_H_
