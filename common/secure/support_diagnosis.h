// How well a support C_t fits a round, measured in the clear
// (`secure.diagnose: true`, clear_support only): each party also sends the
// dense sum of its clients' weighted, clipped x = delta + residual on every
// coordinate, and the union of its clients' own top-k positions; the
// coordinator sums them over the parties and reports
//   energy  = sum_{j in C} S_j^2 / sum_j S_j^2, the share of the sum's
//             energy the support captures (1 when C holds every nonzero);
//   overlap = |C and U| / |U|, U the union of the clients' own top-k: the
//             share of the coordinates some client would have sent on its
//             own that the support sent.
// A diagnostic: it sends what secure aggregation hides, so it is never
// allowed with masks. Thread-compatible values; free functions.
#ifndef SHEFL_COMMON_SECURE_SUPPORT_DIAGNOSIS_H_
#define SHEFL_COMMON_SECURE_SUPPORT_DIAGNOSIS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace shefl {

struct SupportDiagnosis {
  std::vector<double> dense;           // d sums; empty before the first
  std::vector<uint32_t> own_union;     // ascending positions
};

// Adds one client: weight * clip(delta + residual, [-clip, clip]) on every
// coordinate (x formed in float, as the input's words are), and its own top
// `own_k` positions of x (common/secure/vote_counts.h's rule). `residual`
// empty means zeros; else it has delta's size.
void AddClientDiagnosis(absl::Span<const float> delta,
                        absl::Span<const float> residual, double weight,
                        double clip, uint64_t own_k, SupportDiagnosis* d);

// The party's diagnosis on the wire: the dense sum as float32 and the union
// as uint32, both little-endian.
std::string DenseBytes(const SupportDiagnosis& d);
std::string UnionBytes(const SupportDiagnosis& d);

// Adds a party's bytes to the coordinator's sums: `dense` must hold `dim`
// float32 values, all finite, and `own_union` ascending positions below
// `dim`; InvalidArgument naming the field otherwise, and then nothing is
// added.
absl::Status AddPartyDiagnosis(const std::string& dense,
                               const std::string& own_union, uint64_t dim,
                               SupportDiagnosis* sum);

struct SupportFit {
  double energy = 0;   // 0 when the sum is all zeros
  double overlap = 0;  // 0 when the union is empty
};

// The figures above for the support `support` (ascending) of the sums.
SupportFit FitOf(const SupportDiagnosis& sum,
                 absl::Span<const uint32_t> support);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SUPPORT_DIAGNOSIS_H_
