// Capacity levels (000/001 section 2 "Assignment"; 003's per-client
// capacity): a client that trains only part of the M-model ensemble in a
// round. Which part rotates with the round so that every model is covered.
//
// A client of capacity c (models a round, c in (0, M]) trains in round t
// the models
//     x0 = floor(c * (t + o)),  x1 = floor(c * (t + o + 1)),
//     models { (x0 + j) mod M : 0 <= j < x1 - x0 }
// where o is a fixed per-client offset (its cluster, or its id when
// sampled without clusters). For an integer c this is the window of c
// consecutive models starting at (t + o) * c mod M: over any M
// consecutive rounds the windows tile the cycle c times, so the client
// meets every model exactly c times, and clients of the same capacity in
// consecutive clusters take consecutive windows in one round (balance).
// A fractional c (HASA's width r_i * M) gives floor(c) or ceil(c) models
// in turn, so the count over any T rounds is within one of c * T and the
// long-run mean is exactly c. c >= M: all M models.
#ifndef SHEFL_COMMON_FED_CAPACITY_H_
#define SHEFL_COMMON_FED_CAPACITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// The models (ascending) a client of capacity c with offset o trains in
// round t, as above. c <= 0 gives none.
std::vector<int64_t> RotatingModels(double capacity, int64_t round,
                                    int64_t offset, int64_t num_models);

// clients.hpc_capacity: "" (every HPC trains all M), "3" (every HPC 3),
// or "5,3,2" (the HPC with id i takes entry i mod 3: levels dealt over the
// HPCs by id). Each level an integer in [1, M]. The error names the key.
absl::StatusOr<std::vector<int64_t>> ParseCapacityLevels(
    const std::string& text, int64_t num_models);

// The configured capacity of HPC `client_id` from the parsed levels: M
// when there are none.
int64_t ConfiguredHpcCapacity(const std::vector<int64_t>& levels,
                              int64_t client_id, int64_t num_models);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_CAPACITY_H_
