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

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_HONEST_RANGE_H_
