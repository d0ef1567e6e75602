#include "common/secure/shamir.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/secure/gf61.h"
#include "common/secure/openssl_util.h"
#include "common/secure/secret.h"

namespace shefl {

namespace {

// `count` elements uniform in [0, p): the low 61 bits of 8 random bytes,
// drawn again in the rare case (2^-61) they equal p. One call to the
// generator for all of them. They are polynomial coefficients: with one
// share they give the secret, so they are secrets too.
absl::StatusOr<SecretVector<uint64_t>> RandomElements(size_t count) {
  SecretBytes raw(8 * count);
  SHEFL_RETURN_IF_ERROR(secure_internal::PrivateRandom(raw.data(), raw.size()));
  SecretVector<uint64_t> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i] = ReadBe64(raw.data() + 8 * i) & kGf61Prime;
    while (out[i] == kGf61Prime) {
      uint8_t again[8];
      SHEFL_RETURN_IF_ERROR(
          secure_internal::PrivateRandom(again, sizeof again));
      out[i] = ReadBe64(again) & kGf61Prime;
      WipeBytes(again, sizeof again);
    }
  }
  return out;
}

// Chunk c of the secret as a little-endian integer.
uint64_t ChunkValue(ByteView secret, size_t c) {
  uint64_t v = 0;
  const size_t begin = c * kShamirChunkBytes;
  const size_t end = std::min(secret.size(), begin + kShamirChunkBytes);
  for (size_t i = end; i > begin; --i) v = (v << 8) | secret[i - 1];
  return v;
}

// The Lagrange weights w_i with f(z) = sum_i w_i f(xs[i]) for every f of
// degree < xs.size(); xs distinct, so every denominator is nonzero.
std::vector<uint64_t> LagrangeWeights(absl::Span<const uint64_t> xs,
                                      uint64_t z) {
  std::vector<uint64_t> w(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    uint64_t num = 1, den = 1;
    for (size_t j = 0; j < xs.size(); ++j) {
      if (j == i) continue;
      num = Gf61Mul(num, Gf61Sub(z, xs[j]));
      den = Gf61Mul(den, Gf61Sub(xs[i], xs[j]));
    }
    w[i] = Gf61Mul(num, Gf61Inverse(den));
  }
  return w;
}

// sum_i w[i] * shares[i].y[c].
uint64_t Combine(const std::vector<uint64_t>& w,
                 absl::Span<const ShamirShare> shares, size_t c) {
  uint64_t v = 0;
  for (size_t i = 0; i < w.size(); ++i)
    v = Gf61Add(v, Gf61Mul(w[i], shares[i].y[c]));
  return v;
}

absl::Status CheckShares(absl::Span<const ShamirShare> shares, uint32_t t,
                         size_t secret_bytes) {
  if (t == 0 || secret_bytes == 0)
    return absl::InvalidArgumentError(
        "Shamir: t and the secret size must be positive");
  if (shares.size() < t)
    return absl::FailedPreconditionError(absl::StrCat(
        "Shamir: ", shares.size(), " shares, at least t = ", t, " needed"));
  const size_t chunks = ShamirChunks(secret_bytes);
  std::set<uint32_t> seen;
  for (const ShamirShare& s : shares) {
    if (s.x == 0) return absl::InvalidArgumentError("Shamir: a share at x = 0");
    if (!seen.insert(s.x).second)
      return absl::InvalidArgumentError(
          absl::StrCat("Shamir: two shares at x = ", s.x));
    if (s.y.size() != chunks)
      return absl::InvalidArgumentError(
          absl::StrCat("Shamir: the share at x = ", s.x, " has ", s.y.size(),
                       " elements, expected ", chunks));
    for (uint64_t e : s.y)
      if (e >= kGf61Prime)
        return absl::InvalidArgumentError(absl::StrCat(
            "Shamir: the share at x = ", s.x, " has an element not below p"));
  }
  return absl::OkStatus();
}

// The secret whose chunks are sum_i w0[i] y_i[c] (w0: the weights at 0
// of the shares' points); DataLoss when a chunk comes back too large, as
// shares of different sharings would give.
absl::StatusOr<SecretBytes> SecretFromWeights(
    const std::vector<uint64_t>& w0, absl::Span<const ShamirShare> base,
    size_t secret_bytes) {
  SecretBytes secret(secret_bytes);
  for (size_t c = 0; c < ShamirChunks(secret_bytes); ++c) {
    uint64_t v = Combine(w0, base, c);
    const size_t begin = c * kShamirChunkBytes;
    const size_t len = std::min(kShamirChunkBytes, secret_bytes - begin);
    if (v >> (8 * len) != 0)
      return absl::DataLossError(
          "Shamir: the shares do not come from one sharing of a secret of "
          "this size (a chunk came back too large)");
    for (size_t i = 0; i < len; ++i, v >>= 8)
      secret[begin + i] = static_cast<uint8_t>(v);
  }
  return secret;
}

}  // namespace

absl::StatusOr<std::vector<ShamirShare>> ShamirSplit(ByteView secret,
                                                     uint32_t t, uint32_t n) {
  if (secret.empty()) return absl::InvalidArgumentError("Shamir: empty secret");
  if (t == 0 || t > n)
    return absl::InvalidArgumentError(
        absl::StrCat("Shamir: need 1 <= t <= n, got t = ", t, ", n = ", n));
  const size_t chunks = ShamirChunks(secret.size());
  SHEFL_ASSIGN_OR_RETURN(SecretVector<uint64_t> coef,
                         RandomElements(chunks * (t - 1)));
  std::vector<ShamirShare> shares(n);
  for (uint32_t i = 0; i < n; ++i) {
    shares[i].x = i + 1;
    shares[i].y.resize(chunks);
  }
  for (size_t c = 0; c < chunks; ++c) {
    // f_c(x) = s_c + a_1 x + ... + a_{t-1} x^{t-1}, by Horner.
    const uint64_t* a = coef.data() + c * (t - 1);
    const uint64_t s = ChunkValue(secret, c);
    for (ShamirShare& share : shares) {
      uint64_t v = 0;
      for (uint32_t k = t - 1; k >= 1; --k)
        v = Gf61Add(Gf61Mul(v, share.x), a[k - 1]);
      share.y[c] = Gf61Add(Gf61Mul(v, share.x), s);
    }
  }
  return shares;  // the coefficients wipe themselves
}

absl::StatusOr<SecretBytes> ShamirReconstruct(
    absl::Span<const ShamirShare> shares, uint32_t t, size_t secret_bytes) {
  SHEFL_RETURN_IF_ERROR(CheckShares(shares, t, secret_bytes));
  const absl::Span<const ShamirShare> base = shares.subspan(0, t);
  std::vector<uint64_t> xs;
  for (const ShamirShare& s : base) xs.push_back(s.x);
  const size_t chunks = ShamirChunks(secret_bytes);
  for (size_t k = t; k < shares.size(); ++k) {
    const std::vector<uint64_t> w = LagrangeWeights(xs, shares[k].x);
    for (size_t c = 0; c < chunks; ++c)
      if (Combine(w, base, c) != shares[k].y[c])
        return absl::DataLossError(absl::StrCat(
            "Shamir: the share at x = ", shares[k].x,
            " does not lie on the polynomial of the first t shares"));
  }
  return SecretFromWeights(LagrangeWeights(xs, 0), base, secret_bytes);
}

absl::StatusOr<ShamirRebuilder> ShamirRebuilder::ForPoints(
    const std::vector<uint32_t>& xs) {
  std::set<uint32_t> seen;
  for (uint32_t x : xs)
    if (x == 0 || !seen.insert(x).second)
      return absl::InvalidArgumentError(
          "Shamir: the points must be distinct and not 0");
  if (xs.empty()) return absl::InvalidArgumentError("Shamir: no points");
  ShamirRebuilder r;
  r.xs_ = xs;
  r.w0_ = LagrangeWeights(std::vector<uint64_t>(xs.begin(), xs.end()), 0);
  return r;
}

absl::StatusOr<SecretBytes> ShamirRebuilder::Reconstruct(
    absl::Span<const ShamirShare> shares, size_t secret_bytes) const {
  const uint32_t t = static_cast<uint32_t>(xs_.size());
  if (shares.size() != t)
    return absl::InvalidArgumentError(absl::StrCat(
        "Shamir: ", shares.size(), " shares for ", t, " points"));
  SHEFL_RETURN_IF_ERROR(CheckShares(shares, t, secret_bytes));
  for (size_t i = 0; i < t; ++i)
    if (shares[i].x != xs_[i])
      return absl::InvalidArgumentError(absl::StrCat(
          "Shamir: share ", i, " is at x = ", shares[i].x, ", not ", xs_[i]));
  return SecretFromWeights(w0_, shares, secret_bytes);
}

absl::StatusOr<uint64_t> LagrangeAt(absl::Span<const uint64_t> xs,
                                    absl::Span<const uint64_t> ys, uint64_t z) {
  if (xs.empty() || xs.size() != ys.size())
    return absl::InvalidArgumentError(
        "Lagrange: need as many x as y, not none");
  std::set<uint64_t> seen;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i] >= kGf61Prime || ys[i] >= kGf61Prime)
      return absl::InvalidArgumentError("Lagrange: a value not below p");
    if (!seen.insert(xs[i]).second)
      return absl::InvalidArgumentError("Lagrange: repeated x");
  }
  if (z >= kGf61Prime)
    return absl::InvalidArgumentError("Lagrange: z not below p");
  const std::vector<uint64_t> w = LagrangeWeights(xs, z);
  uint64_t v = 0;
  for (size_t i = 0; i < w.size(); ++i) v = Gf61Add(v, Gf61Mul(w[i], ys[i]));
  return v;
}

}  // namespace shefl
