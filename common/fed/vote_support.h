// The voted part of the layout support (docs/DESIGN.md, "Secure
// aggregation: the vote"). Round t's secure sum carries, for each large
// tensor seen as a grid (common/core/tensor_grid.h), how many of the
// survivors' clients' own top-k positions fell in each row (R_o) and each
// column (C_i). Round t + 1's V then scores coordinate (o, i) of a grid by
// R_o * C_i: where rows and columns that many clients found large cross.
// The budget is split between the grids by their share of the votes (the
// largest remainders get the leftover), and within a grid the highest
// scores win, ties by |A| (the public accumulator) and then by a hash of
// (run seed, round, model, coordinate), so the choice is a function of
// public inputs alone. A coordinate scored 0 is never voted in.
// Thread-safe: free functions.
#ifndef SHEFL_COMMON_FED_VOTE_SUPPORT_H_
#define SHEFL_COMMON_FED_VOTE_SUPPORT_H_

#include <cstdint>
#include <vector>

#include "common/core/tensor_grid.h"
#include "common/fed/common_support.h"

namespace shefl {

struct SupportVote {
  std::vector<TensorGrid> grids;
  std::vector<uint32_t> counts;  // per grid: its rows' counts, then its columns'
  bool empty() const { return counts.empty(); }
};

// At most `budget` coordinates of the vote's grids, none `taken` (d
// flags), in no particular order; fewer where the votes cover fewer.
std::vector<uint32_t> VotedCoordinates(const SupportVote& vote,
                                       const std::vector<float>& accumulator,
                                       const std::vector<bool>& taken,
                                       uint64_t budget,
                                       const SupportChoice& choice);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_VOTE_SUPPORT_H_
