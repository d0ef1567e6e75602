// A party's vote on where the next support looks (docs/DESIGN.md, "Secure
// aggregation: the vote"): for each large tensor seen as a grid
// (common/core/tensor_grid.h), how many of its clients' own top-k
// positions fall in each row and in each column. The counts travel as
// extra words of the party's masked input, so the coordinator learns them
// only summed over the session's survivors.
// A client's own top-k is its k largest |x| (x = delta + residual, float),
// ties to the lower coordinate, NaN never ahead of a number: the rule the
// Python party follows too, so both count the same positions.
// Thread-safe: free functions.
#ifndef SHEFL_COMMON_SECURE_VOTE_COUNTS_H_
#define SHEFL_COMMON_SECURE_VOTE_COUNTS_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "common/core/tensor_grid.h"
#include "common/secure/secret.h"

namespace shefl {

// The positions of the top min(k, |x|) magnitudes of x, ascending. They
// say where one client's update is large: the caller wipes them.
std::vector<uint64_t> OwnTopK(absl::Span<const float> x, uint64_t k);

// Adds one count per position to its row's and its column's word of the
// grid that holds it: grid g's words start at `base` plus the marginals
// of the grids before it (rows first, then columns). Positions outside
// every grid count nowhere. `words` must hold base + MarginalWords(grids).
void AddVoteCounts(absl::Span<const uint64_t> positions,
                   const std::vector<TensorGrid>& grids, size_t base,
                   SecretWords* words);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_VOTE_COUNTS_H_
