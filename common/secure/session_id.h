// The session id of one secure-aggregation instance (one round, one
// model): SHA-256 of a canonical encoding of everything the parties must
// agree on. Every key derivation uses it as the HKDF salt and every share
// box authenticates it, so masks and shares of one session are useless in
// another, and parties that disagree on any parameter (the roster, t, the
// scale, the support, the global model) fail loudly instead of producing a
// wrong sum.
//
// The encoding, all integers big-endian:
//   "shefl sid v1"                     12 ASCII bytes, no terminator
//   len(run_id) (4) || run_id          UTF-8 bytes as given
//   round (8) || model (4)
//   len(roster) (4) || ids (4 each)    sorted ascending
//   n (4) || t (4) || scale_bits (4)
//   clip (8)                           the IEEE-754 bits of the double
//   support_hash (32) || model_hash (32)
// A SecAgg+ session (degree k > 0: parties mask with and share to their
// neighbours in a graph of degree k, common/secure/neighbour_graph.h)
// starts "shefl sid v2" instead and appends k (4); an all-pairs session
// (k = 0) has the v1 bytes above, unchanged.
// The lengths make it prefix-free, so no two parameter sets share bytes.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_SESSION_ID_H_
#define SHEFL_COMMON_SECURE_SESSION_ID_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/secure/bytes.h"

namespace shefl {

using SessionId = Key32;

struct SessionParams {
  std::string run_id;
  uint64_t round = 0;
  uint32_t model = 0;
  std::vector<uint32_t> roster;  // party ids, in any order
  uint32_t n = 0;                // must equal roster.size()
  uint32_t t = 0;                // 1..n
  uint32_t scale_bits = 0;       // f of the fixed-point encoding
  double clip = 0;               // c, positive and finite
  Key32 support_hash{};          // hash of the support C_t
  Key32 model_hash{};            // hash of the global model
  uint32_t degree = 0;           // k of the SecAgg+ graph; 0: all pairs
};

// The canonical bytes above. Refuses (InvalidArgument) a repeated party id,
// n other than the roster's size, t outside 1..n (1..k + 1 with a graph),
// a degree that is odd or not below n - 1, a clip that is not positive and
// finite.
absl::StatusOr<Bytes> EncodeSessionParams(const SessionParams& params);

// SHA-256 of EncodeSessionParams(params).
absl::StatusOr<SessionId> MakeSessionId(const SessionParams& params);

// How many parties hold shares of one party's secrets: k + 1 with a
// graph (its neighbours and itself), else n. t is a threshold of these.
inline uint32_t ShareHolders(const SessionParams& p) {
  return p.degree > 0 ? p.degree + 1 : p.n;
}

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SESSION_ID_H_
