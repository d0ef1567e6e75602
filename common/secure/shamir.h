// Shamir t-of-n secret sharing of byte secrets over GF(2^61 - 1): any t
// shares give the secret back, and any t - 1 are consistent with every
// secret, so they tell nothing about it. Secure aggregation shares each
// party's self-mask seed and masking private key this way, so that the
// coordinator can remove the self mask of a survivor, or the pairwise masks
// of a party that dropped, from any t answers (docs/DESIGN.md).
// The chunking and the wire form of a share: common/secure/shamir_share.h.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SECURE_SHAMIR_H_
#define SHEFL_COMMON_SECURE_SHAMIR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/secure/bytes.h"
#include "common/secure/secret.h"
#include "common/secure/shamir_share.h"

namespace shefl {

// n shares of `secret` (not empty), share i at x = i + 1, any t of which
// reconstruct it (1 <= t <= n). Each chunk's polynomial has degree t - 1
// and coefficients drawn uniformly below p from OpenSSL's private generator
// (61 random bits, the one value p itself rejected).
absl::StatusOr<std::vector<ShamirShare>> ShamirSplit(ByteView secret,
                                                     uint32_t t, uint32_t n);

// The `secret_bytes`-byte secret from `shares` by Lagrange interpolation at
// 0 over the first t of them. Refuses fewer than t shares
// (FailedPrecondition); a duplicate x, x = 0, an element not below p, or a
// share of another size (InvalidArgument). Shares beyond the first t must
// lie on the same polynomials, and each chunk must come back below 2^56
// (below 2^(8 * its length)); shares that do not belong to one sharing fail
// these checks with DataLoss rather than yield a wrong secret.
absl::StatusOr<SecretBytes> ShamirReconstruct(
    absl::Span<const ShamirShare> shares, uint32_t t, size_t secret_bytes);

// The value at z of the polynomial of degree < xs.size() through the
// points (xs[i], ys[i]) (Lagrange). xs distinct and all values below p,
// else InvalidArgument. Exposed so that tests can build the polynomial
// through any t - 1 shares and a chosen secret.
absl::StatusOr<uint64_t> LagrangeAt(absl::Span<const uint64_t> xs,
                                    absl::Span<const uint64_t> ys, uint64_t z);

// Many secrets from shares at the same t points: the coordinator rebuilds
// every survivor's seed and every dropped party's key from one set of t
// replies. The Lagrange weights at 0 are computed once, O(t^2); each
// secret then costs O(t) a chunk (ShamirReconstruct pays O(t^2) a call,
// and more for each share beyond t, which it checks). Thread-compatible.
class ShamirRebuilder {
 public:
  // `xs`: the t distinct points (none 0) the shares will come from.
  static absl::StatusOr<ShamirRebuilder> ForPoints(const std::vector<uint32_t>& xs);
  // The `secret_bytes`-byte secret from exactly t shares at those points,
  // in that order; the other refusals as ShamirReconstruct's.
  absl::StatusOr<SecretBytes> Reconstruct(
      absl::Span<const ShamirShare> shares, size_t secret_bytes) const;

 private:
  std::vector<uint32_t> xs_;
  std::vector<uint64_t> w0_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_SECURE_SHAMIR_H_
