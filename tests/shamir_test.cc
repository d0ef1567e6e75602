// Shamir sharing over GF(2^61 - 1) (common/secure/shamir.h): the field's
// arithmetic against 128-bit reference sums, every or many t-subsets of
// n = 5, 10 and 100 shares giving back 16- and 32-byte secrets, t - 1
// shares being consistent with any secret (constructively, and as a
// statistical test: a share's distribution does not depend on the secret),
// the wire form, and the refusals.
#include "common/secure/shamir.h"

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/secure/bytes.h"
#include "common/secure/gf61.h"
#include "common/secure/shamir_share.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

Bytes RandomBytes(std::mt19937_64& rng, size_t n) {
  Bytes b(n);
  for (uint8_t& v : b) v = static_cast<uint8_t>(rng());
  return b;
}

uint64_t Element(std::mt19937_64& rng) { return rng() % kGf61Prime; }

TEST_CASE("GF(2^61-1) arithmetic matches 128-bit reference arithmetic") {
  std::mt19937_64 rng(61);
  const unsigned __int128 p = kGf61Prime;
  std::vector<uint64_t> edge = {0,
                                1,
                                2,
                                kGf61Prime - 1,
                                kGf61Prime - 2,
                                uint64_t{1} << 60,
                                (uint64_t{1} << 60) + 1};
  for (int i = 0; i < 2000; ++i) edge.push_back(Element(rng));
  for (size_t i = 0; i + 1 < edge.size(); ++i) {
    const uint64_t a = edge[i], b = edge[edge.size() - 1 - i];
    CHECK(Gf61Mul(a, b) ==
          static_cast<uint64_t>(static_cast<unsigned __int128>(a) * b % p));
    CHECK(Gf61Add(a, b) ==
          static_cast<uint64_t>((static_cast<unsigned __int128>(a) + b) % p));
    CHECK(Gf61Sub(a, b) == static_cast<uint64_t>((a + p - b) % p));
    if (a != 0) CHECK(Gf61Mul(a, Gf61Inverse(a)) == 1);
  }
  // The largest product reduces correctly too.
  const unsigned __int128 big = (p - 1) * (p - 1);
  CHECK(Gf61Reduce(big) == static_cast<uint64_t>(big % p));
  CHECK(Gf61Pow(3, kGf61Prime - 1) == 1);  // Fermat
  CHECK(Gf61Pow(37, 0) == 1);
}

// Shares at the given indices (0-based) of `all`.
std::vector<ShamirShare> Pick(const std::vector<ShamirShare>& all,
                              const std::vector<size_t>& idx) {
  std::vector<ShamirShare> out;
  for (size_t i : idx) out.push_back(all[i]);
  return out;
}

void CheckSubset(const std::vector<ShamirShare>& all,
                 const std::vector<size_t>& idx, uint32_t t,
                 const Bytes& secret) {
  absl::StatusOr<SecretBytes> got =
      ShamirReconstruct(Pick(all, idx), t, secret.size());
  REQUIRE(got.ok());
  CHECK(*got == secret);
}

TEST_CASE("every t-subset reconstructs for n = 5, t = 3 and n = 10, t = 7") {
  std::mt19937_64 rng(5);
  for (auto [n, t] : {std::pair<uint32_t, uint32_t>{5, 3}, {10, 7}}) {
    for (size_t size : {16, 32}) {
      const Bytes secret = RandomBytes(rng, size);
      absl::StatusOr<std::vector<ShamirShare>> shares =
          ShamirSplit(secret, t, n);
      REQUIRE(shares.ok());
      REQUIRE(shares->size() == n);
      for (uint32_t i = 0; i < n; ++i) {
        CHECK((*shares)[i].x == i + 1);
        CHECK((*shares)[i].y.size() == ShamirChunks(size));
      }
      // Every subset of size t, by a bit mask; order shuffled each time.
      int subsets = 0;
      for (uint32_t mask = 0; mask < (1u << n); ++mask) {
        if (static_cast<uint32_t>(__builtin_popcount(mask)) != t) continue;
        std::vector<size_t> idx;
        for (uint32_t i = 0; i < n; ++i)
          if (mask & (1u << i)) idx.push_back(i);
        std::shuffle(idx.begin(), idx.end(), rng);
        CheckSubset(*shares, idx, t, secret);
        ++subsets;
      }
      CHECK(subsets == (n == 5 ? 10 : 120));
      // All n shares at once: the extra ones are checked to agree.
      std::vector<size_t> all(n);
      std::iota(all.begin(), all.end(), 0);
      CheckSubset(*shares, all, t, secret);
    }
  }
}

TEST_CASE(
    "random 67-subsets of 100 shares reconstruct 16- and 32-byte secrets") {
  std::mt19937_64 rng(100);
  for (size_t size : {16, 32}) {
    const Bytes secret = RandomBytes(rng, size);
    absl::StatusOr<std::vector<ShamirShare>> shares =
        ShamirSplit(secret, 67, 100);
    REQUIRE(shares.ok());
    std::vector<size_t> idx(100);
    std::iota(idx.begin(), idx.end(), 0);
    for (int trial = 0; trial < 25; ++trial) {
      std::shuffle(idx.begin(), idx.end(), rng);
      CheckSubset(*shares, std::vector<size_t>(idx.begin(), idx.begin() + 67),
                  67, secret);
    }
    // 66 shares are refused.
    absl::StatusOr<SecretBytes> short_by_one = ShamirReconstruct(
        Pick(*shares, std::vector<size_t>(idx.begin(), idx.begin() + 66)), 67,
        size);
    CHECK(short_by_one.status().code() ==
          absl::StatusCode::kFailedPrecondition);
  }
}

TEST_CASE("one rebuilder at t points reconstructs every secret shared there") {
  // As the coordinator does: the same t replies give many secrets.
  std::mt19937_64 rng(7);
  const uint32_t t = 7, n = 10;
  std::vector<size_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0);
  std::shuffle(idx.begin(), idx.end(), rng);
  idx.resize(t);
  std::vector<uint32_t> xs;
  for (size_t i : idx) xs.push_back(static_cast<uint32_t>(i + 1));
  absl::StatusOr<ShamirRebuilder> r = ShamirRebuilder::ForPoints(xs);
  REQUIRE(r.ok());
  for (size_t size : {16, 32, 16, 32}) {
    const Bytes secret = RandomBytes(rng, size);
    auto shares = ShamirSplit(secret, t, n);
    REQUIRE(shares.ok());
    const std::vector<ShamirShare> picked = Pick(*shares, idx);
    auto back = r->Reconstruct(picked, size);
    REQUIRE(back.ok());
    CHECK(*back == secret);
    CHECK(*back == *ShamirReconstruct(picked, t, size));
    // Shares in another order than the points, or one short, are refused.
    std::vector<ShamirShare> swapped = picked;
    std::swap(swapped[0], swapped[1]);
    CHECK(!r->Reconstruct(swapped, size).ok());
    CHECK(!r->Reconstruct(absl::MakeConstSpan(picked).subspan(1), size).ok());
  }
  CHECK(!ShamirRebuilder::ForPoints({1, 2, 2}).ok());
  CHECK(!ShamirRebuilder::ForPoints({0, 1}).ok());
  CHECK(!ShamirRebuilder::ForPoints({}).ok());
}

TEST_CASE("secrets with the high bytes of every chunk set come back whole") {
  for (uint8_t fill : {0x00, 0xff, 0x80}) {
    const Bytes secret(32, fill);
    absl::StatusOr<std::vector<ShamirShare>> shares = ShamirSplit(secret, 3, 5);
    REQUIRE(shares.ok());
    CheckSubset(*shares, {4, 0, 2}, 3, secret);
  }
  // t = 1 is allowed: every share is the secret (each polynomial constant).
  const Bytes one(16, 0x5a);
  absl::StatusOr<std::vector<ShamirShare>> shares = ShamirSplit(one, 1, 4);
  REQUIRE(shares.ok());
  CheckSubset(*shares, {3}, 1, one);
}

// The chunks of a byte secret as field elements (7 bytes, little-endian).
std::vector<uint64_t> Chunks(const Bytes& secret) {
  std::vector<uint64_t> out(ShamirChunks(secret.size()), 0);
  for (size_t i = 0; i < secret.size(); ++i)
    out[i / kShamirChunkBytes] |= uint64_t{secret[i]}
                                  << (8 * (i % kShamirChunkBytes));
  return out;
}

TEST_CASE(
    "t-1 shares fit every secret: a completing share exists for any "
    "candidate") {
  std::mt19937_64 rng(7);
  const uint32_t n = 10, t = 7;
  const Bytes secret = RandomBytes(rng, 32);
  absl::StatusOr<std::vector<ShamirShare>> shares = ShamirSplit(secret, t, n);
  REQUIRE(shares.ok());
  // The coalition: the t - 1 shares at x = 1..6.
  const std::vector<ShamirShare> known(shares->begin(),
                                       shares->begin() + t - 1);
  std::vector<Bytes> candidates = {Bytes(32, 0), Bytes(32, 0xff), secret};
  for (int i = 0; i < 5; ++i) candidates.push_back(RandomBytes(rng, 32));
  std::vector<std::vector<uint64_t>> forged_ys;
  for (const Bytes& candidate : candidates) {
    // The one polynomial of degree t - 1 through (0, s') and the known
    // shares, evaluated at x = 9: a share that completes them to s'.
    const std::vector<uint64_t> s = Chunks(candidate);
    ShamirShare forged;
    forged.x = 9;
    for (size_t c = 0; c < s.size(); ++c) {
      std::vector<uint64_t> xs = {0}, ys = {s[c]};
      for (const ShamirShare& k : known) {
        xs.push_back(k.x);
        ys.push_back(k.y[c]);
      }
      absl::StatusOr<uint64_t> y = LagrangeAt(xs, ys, forged.x);
      REQUIRE(y.ok());
      forged.y.push_back(*y);
    }
    std::vector<ShamirShare> set = known;
    set.push_back(forged);
    absl::StatusOr<SecretBytes> got = ShamirReconstruct(set, t, 32);
    REQUIRE(got.ok());
    CHECK(*got == candidate);
    // The polynomial through (0, s'), the forged share and five of the
    // known ones gives back the sixth: it is the same polynomial.
    for (size_t c = 0; c < s.size(); ++c) {
      std::vector<uint64_t> xs = {0, forged.x}, ys = {s[c], forged.y[c]};
      for (size_t k = 1; k < known.size(); ++k) {
        xs.push_back(known[k].x);
        ys.push_back(known[k].y[c]);
      }
      absl::StatusOr<uint64_t> y0 = LagrangeAt(xs, ys, known[0].x);
      REQUIRE(y0.ok());
      CHECK(*y0 == known[0].y[c]);
    }
    forged_ys.push_back(forged.y);
  }
  // Distinct candidates need distinct completions (one polynomial each).
  std::sort(forged_ys.begin(), forged_ys.end());
  CHECK(std::adjacent_find(forged_ys.begin(), forged_ys.end()) ==
        forged_ys.end());
  // The true completion is the real share at x = 9.
  CHECK(std::find(forged_ys.begin(), forged_ys.end(), (*shares)[8].y) !=
        forged_ys.end());
}

// Pearson's statistic of a 2 x k contingency table.
double ChiSquared2xK(const std::vector<double>& a,
                     const std::vector<double>& b) {
  const double na = std::accumulate(a.begin(), a.end(), 0.0);
  const double nb = std::accumulate(b.begin(), b.end(), 0.0);
  double stat = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double col = a[i] + b[i];
    if (col == 0) continue;  // an empty column adds nothing
    const double ea = col * na / (na + nb), eb = col * nb / (na + nb);
    stat += (a[i] - ea) * (a[i] - ea) / ea + (b[i] - eb) * (b[i] - eb) / eb;
  }
  return stat;
}

TEST_CASE(
    "a share's distribution does not depend on the secret (chi-squared)") {
  // 20,000 sharings each of two very different secrets; the top 4 bits of
  // every element of the share at x = 1 (and of x = 5) fill 16 buckets.
  // Shares of the two must be alike and uniform. The coefficients come
  // from OpenSSL's generator, so the limits are at p = 1e-6 (chi-squared,
  // 15 degrees of freedom: 56.5), not to fail by chance; a leak of the
  // secret (an element equal to it, or biased towards it) is far beyond.
  const Bytes zeros(16, 0x00), ones(16, 0xff);
  std::vector<double> hz(16, 0), ho(16, 0), h5(16, 0);
  for (int i = 0; i < 20000; ++i) {
    absl::StatusOr<std::vector<ShamirShare>> a = ShamirSplit(zeros, 3, 5);
    absl::StatusOr<std::vector<ShamirShare>> b = ShamirSplit(ones, 3, 5);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    for (uint64_t e : (*a)[0].y) hz[e >> 57] += 1;
    for (uint64_t e : (*b)[0].y) ho[e >> 57] += 1;
    for (uint64_t e : (*b)[4].y) h5[e >> 57] += 1;
  }
  const double kLimit = 56.5;
  CHECK(ChiSquared2xK(hz, ho) < kLimit);
  CHECK(ChiSquared2xK(hz, h5) < kLimit);
  for (const auto* h : {&hz, &ho, &h5}) {
    const double total = std::accumulate(h->begin(), h->end(), 0.0);
    double stat = 0;
    for (double c : *h)
      stat += (c - total / 16) * (c - total / 16) / (total / 16);
    CHECK(stat < kLimit);
  }
  // The statistic sees a difference where there is one: elements of shares
  // against the secret's own chunks (constant) are far apart.
  std::vector<double> constant(16, 0);
  constant[0] = 60000;
  CHECK(ChiSquared2xK(hz, constant) > 1000);
}

TEST_CASE(
    "reconstruction refuses too few, repeated, zero and out-of-field shares") {
  const Bytes secret(16, 0x42);
  absl::StatusOr<std::vector<ShamirShare>> shares = ShamirSplit(secret, 3, 5);
  REQUIRE(shares.ok());
  auto code = [&](std::vector<ShamirShare> s, size_t size = 16) {
    return ShamirReconstruct(s, 3, size).status().code();
  };
  const auto& s = *shares;
  CHECK(code({s[0], s[1], s[2]}) == absl::StatusCode::kOk);
  CHECK(code({s[0], s[1]}) == absl::StatusCode::kFailedPrecondition);
  CHECK(code({}) == absl::StatusCode::kFailedPrecondition);
  CHECK(code({s[0], s[1], s[1]}) == absl::StatusCode::kInvalidArgument);
  ShamirShare zero = s[2];
  zero.x = 0;
  CHECK(code({s[0], s[1], zero}) == absl::StatusCode::kInvalidArgument);
  ShamirShare big = s[2];
  big.y[1] = kGf61Prime;
  CHECK(code({s[0], s[1], big}) == absl::StatusCode::kInvalidArgument);
  ShamirShare truncated = s[2];
  truncated.y.pop_back();
  CHECK(code({s[0], s[1], truncated}) == absl::StatusCode::kInvalidArgument);
  CHECK(code({s[0], s[1], s[2]}, 32) == absl::StatusCode::kInvalidArgument);
  // An extra share off the polynomial, or a changed share among t, is
  // caught rather than turned into a wrong secret.
  ShamirShare off = s[3];
  off.y[0] = Gf61Add(off.y[0], 1);
  CHECK(code({s[0], s[1], s[2], off}) == absl::StatusCode::kDataLoss);
  // The 2-byte last chunk; x = 3's Lagrange weight at 0 among x = 1, 2, 3
  // is 1, so the secret's chunk moves by exactly 2^40, out of its range.
  ShamirShare changed = s[2];
  changed.y[2] = Gf61Add(changed.y[2], uint64_t{1} << 40);
  CHECK(code({s[0], s[1], changed}) == absl::StatusCode::kDataLoss);
  CHECK(ShamirReconstruct(s, 0, 16).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("splitting refuses t outside 1..n and an empty secret") {
  CHECK_FALSE(ShamirSplit(Bytes(16, 1), 0, 5).ok());
  CHECK_FALSE(ShamirSplit(Bytes(16, 1), 6, 5).ok());
  CHECK_FALSE(ShamirSplit(Bytes{}, 2, 5).ok());
  CHECK(ShamirSplit(Bytes(16, 1), 5, 5).ok());
}

TEST_CASE("a share's wire form is 28 or 44 bytes and parses back with checks") {
  CHECK(ShamirShareBytes(16) == 28);
  CHECK(ShamirShareBytes(32) == 44);
  absl::StatusOr<std::vector<ShamirShare>> shares =
      ShamirSplit(Bytes(32, 0xa5), 3, 5);
  REQUIRE(shares.ok());
  const ShamirShare& s = (*shares)[3];
  const Bytes wire = SerializeShamirShare(s);
  REQUIRE(wire.size() == 44);
  CHECK(ReadBe32(wire.data()) == 4);  // x first, big-endian
  CHECK(ReadBe64(wire.data() + 4) == s.y[0]);
  absl::StatusOr<ShamirShare> back = ParseShamirShare(wire, 32);
  REQUIRE(back.ok());
  CHECK(back->x == s.x);
  CHECK(back->y == s.y);
  CHECK_FALSE(ParseShamirShare(wire, 16).ok());  // 44 bytes are not 28
  CHECK_FALSE(ParseShamirShare(ByteView(wire).subspan(0, 43), 32).ok());
  CHECK_FALSE(ParseShamirShare(ByteView(wire).subspan(0, 0), 32).ok());
  Bytes zero_x = wire;
  zero_x[3] = 0;
  CHECK_FALSE(ParseShamirShare(zero_x, 32).ok());
  Bytes too_big = wire;
  for (int i = 4; i < 12; ++i) too_big[i] = 0xff;  // 2^64 - 1 >= p
  CHECK_FALSE(ParseShamirShare(too_big, 32).ok());
  Bytes at_p = wire;
  const uint64_t p = kGf61Prime;
  for (int i = 0; i < 8; ++i)
    at_p[4 + i] = static_cast<uint8_t>(p >> (56 - 8 * i));
  CHECK_FALSE(ParseShamirShare(at_p, 32).ok());
  at_p[11] -= 1;  // p - 1 is an element
  CHECK(ParseShamirShare(at_p, 32).ok());
}

TEST_CASE(
    "Lagrange interpolation refuses repeated points and values beyond p") {
  CHECK(*LagrangeAt({1, 2}, {5, 7}, 3) == 9);  // the line 2x + 3
  CHECK(*LagrangeAt({1, 2}, {5, 7}, 0) == 3);
  CHECK_FALSE(LagrangeAt({1, 1}, {5, 7}, 0).ok());
  CHECK_FALSE(LagrangeAt({1, 2}, {5}, 0).ok());
  CHECK_FALSE(LagrangeAt({}, {}, 0).ok());
  CHECK_FALSE(LagrangeAt({1, kGf61Prime}, {5, 7}, 0).ok());
}

}  // namespace
}  // namespace shefl
