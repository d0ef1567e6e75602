// What an honest secure sum can be (docs/DESIGN.md, "Secure aggregation:
// honest sums"). Every client's word on a coordinate is
// round(weight * clip_c(x) * 2^f) (common/secure/secure_input.h), so its
// magnitude is at most ceil(min(float(weight * c), c) * 2^f) whatever x
// was, and the unmasked sum of the survivors' inputs is at most the sum of
// those bounds over the survivors' clients. A word beyond it was not made
// by the encoding: some party lied about its masked input, and the sum
// must not reach the model. A liar that stays within the bound moves each
// coordinate of the update by at most c (the clip bounds the harm).
// Thread-safe: free functions.
#ifndef SHEFL_COMMON_SECURE_HONEST_RANGE_H_
#define SHEFL_COMMON_SECURE_HONEST_RANGE_H_

#include <cstdint>
#include <optional>

#include "absl/types/span.h"

namespace shefl {

// The largest magnitude of one client's word at public weight `weight`,
// clip `clip` and 2^`scale_bits`, computed as AddClientInput encodes.
uint64_t ClientWordBound(double weight, double clip, int scale_bits);

// The first coordinate whose word, read as int32, is beyond `bound` in
// magnitude; nullopt when the whole sum could be honest.
std::optional<size_t> FirstDishonestWord(absl::Span<const uint32_t> sum,
                                         uint64_t bound);

// The vote's words (common/secure/vote_counts.h) are counts: each client
// adds at most its own k to any one of them, so an honest word, read
// unsigned, is at most the survivors' clients' k summed. The first word
// of `counts` beyond `bound`; nullopt when all could be honest.
std::optional<size_t> FirstDishonestCount(absl::Span<const uint32_t> counts,
                                          uint64_t bound);

// privacy.mode distributed: the survivors' noises (variance
// `noise_variance` per word in all, integer units) widen the honest range.
// A word may pass `bound` by kNoiseTailSigmas standard deviations (an
// honest sum does so with probability below 1e-22 per word).
inline constexpr double kNoiseTailSigmas = 10;
uint64_t NoisyWordBound(uint64_t bound, double noise_variance);

// The noise's norm over K words concentrates: it passes
// sigma sqrt(K + 2 sqrt(40 K) + 80) with probability below e^-40
// (Laurent and Massart's chi-squared bound). The L2 norm of the sum's K
// value words when it is beyond `honest_l2` (the most the clients' words
// can be together) plus that; nullopt when the sum could be honest. A
// liar inside the word bound is thereby held to about what the honest
// clients left unused of their norms.
std::optional<double> DishonestNorm(absl::Span<const uint32_t> values,
                                    double honest_l2, double noise_variance);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_HONEST_RANGE_H_
