// The degree and threshold of SecAgg+ (Bell, Bonawitz, Gascon, Lepoint,
// Raykova, "Secure Single-Server Aggregation with (Poly)Logarithmic
// Overhead", CCS 2020). For many parties each one masks with, and shares
// its seed and masking key to, only its k neighbours in a random k-regular
// Harary graph (common/secure/neighbour_graph.h), and a neighbourhood's t
// shares reconstruct. The finder picks the smallest even k, and a t, such
// that against a server colluding with a fraction gamma of the parties, and
// a fraction delta dropping out (the semi-honest model of the paper):
//   - the honest survivors stay connected in the graph, and no honest party
//     has t corrupt neighbours, except with probability 2^-sigma (the
//     security budget, split evenly between the two events);
//   - every party keeps at least t surviving neighbours, except with
//     probability 2^-eta (the correctness budget),
// the corrupt and dropped parties being a random subset of the roster
// (the graph is drawn after the roster is fixed). The bounds are those of
// Google's reference finder: a union bound over the pairs of gaps that
// could cut the ring, and exact hypergeometric tails with a union bound
// over the parties. When no sparse degree meets them (small n), the result
// is the complete graph, degree n - 1, which is all-pairs SecAgg.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_SECAGG_PLUS_PARAMS_H_
#define SHEFL_COMMON_SECURE_SECAGG_PLUS_PARAMS_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace shefl {

// The largest roster the finder takes: its search costs about k^2 / 4
// steps, and beyond a million parties no one has checked it.
inline constexpr int64_t kMaxGraphParties = 1000000;

// Above gamma + delta = 0.9 the degree the bounds need nears n (nothing is
// saved over all pairs) and the search nears n^2 / 4 steps.
inline constexpr double kMaxBadFraction = 0.9;

struct GraphParams {
  int64_t n = 0;          // parties
  int64_t degree = 0;     // k: even and below n - 1, or n - 1 (complete)
  int64_t threshold = 0;  // t: shares that reconstruct, 2 <= t <= k
  bool complete() const { return degree >= n - 1; }
};

// The smallest even degree k < n - 1 meeting the bounds above, with the
// smallest threshold that keeps the corrupt neighbours below it (but at
// least 2, so that no single share is a secret); else the complete graph,
// with t = (corrupt parties) + 1, again at least 2. InvalidArgument naming
// the argument for n outside 2..kMaxGraphParties, gamma or delta outside
// [0, 1) (or not a number), gamma + delta above kMaxBadFraction, sigma or
// eta outside 1..200; FailedPrecondition when even the complete graph
// cannot meet them (a few parties with many dropouts).
// `majority`: t is also at least a majority of the k + 1 holders of each
// secret (a party's neighbours and itself), which keeps a coordinator that
// lies about who dropped from collecting both secrets of one party
// (common/secure/party.h); k then grows until the correctness bound holds
// for that t. The complete graph's t is left as above (all-pairs sessions
// choose their own).
absl::StatusOr<GraphParams> FindGraphParams(int64_t n, double gamma,
                                            double delta, int sigma = 40,
                                            int eta = 20,
                                            bool majority = false);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SECAGG_PLUS_PARAMS_H_
