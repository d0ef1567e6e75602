// The neighbour graph of SecAgg+ (common/secure/secagg_plus_params.h): the
// parties of a session placed on a ring in a pseudorandom order drawn from
// a public 32-byte seed (the session id), each joined to the k / 2 before
// and the k / 2 after it: a Harary graph H(k, n), k-regular and
// k-connected, with random labels. A party masks with, and shares to, its
// neighbours only.
//
// Every party derives the same graph from the seed and the roster: the
// roster is sorted, the key HKDF-SHA256(ikm = seed, info = "shefl
// neighbour graph v1") keys the AES-256-CTR word stream
// (common/secure/aes_ctr.h), and a Fisher-Yates shuffle of the sorted
// roster draws index j in 0..i from the next word w that is below
// 2^32 - (2^32 mod (i + 1)), as j = w mod (i + 1) (rejection, so the
// permutation is uniform). No std:: distribution is used: their outputs
// differ between standard libraries. A degree of n - 1 or more gives the
// complete graph (all pairs), so a small session is all-pairs SecAgg.
// Thread-safe: a graph is immutable once made.
#ifndef SHEFL_COMMON_SECURE_NEIGHBOUR_GRAPH_H_
#define SHEFL_COMMON_SECURE_NEIGHBOUR_GRAPH_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/secure/bytes.h"
#include "common/secure/session_id.h"

namespace shefl {

class NeighbourGraph {
 public:
  // The parties.
  size_t size() const { return ring_.size(); }
  // k: every party's number of neighbours (n - 1 when complete).
  int64_t degree() const;
  bool complete() const { return complete_; }
  // The parties in ring order (sorted ascending when complete).
  const std::vector<uint32_t>& ring() const { return ring_; }
  // Whether `party` is in the graph.
  bool Contains(uint32_t party) const;
  // The neighbours of `party`, ascending; NotFound for a party not in it.
  absl::StatusOr<std::vector<uint32_t>> Neighbours(uint32_t party) const;
  // Whether u and v (u != v, both in the graph) are neighbours.
  bool Adjacent(uint32_t u, uint32_t v) const;

 private:
  friend absl::StatusOr<NeighbourGraph> MakeNeighbourGraph(
      ByteView seed, absl::Span<const uint32_t> parties, int64_t degree);

  // The ring position of `party`, or -1.
  int64_t Position(uint32_t party) const;

  std::vector<uint32_t> ring_;      // parties in ring order
  std::vector<uint32_t> sorted_;    // parties ascending
  std::vector<uint32_t> position_;  // position_[i]: ring index of sorted_[i]
  int64_t half_ = 0;                // k / 2 when not complete
  bool complete_ = false;
};

// The graph of `parties` (any order, no repeats, at least 2) and `degree`
// (even and 2..n - 2, or at least n - 1 for the complete graph) from
// `seed` (32 bytes). InvalidArgument naming seed, parties or degree.
absl::StatusOr<NeighbourGraph> MakeNeighbourGraph(
    ByteView seed, absl::Span<const uint32_t> parties, int64_t degree);

// The graph of a session: its roster and degree (complete when 0) from
// its own id, which covers both, so every party draws the same graph.
absl::StatusOr<NeighbourGraph> SessionGraph(const SessionParams& params,
                                            const SessionId& sid);

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_NEIGHBOUR_GRAPH_H_
