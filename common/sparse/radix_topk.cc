#include "common/sparse/radix_topk.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "common/sparse/radix_keep.h"
#include "common/sparse/topk_shared.h"

namespace shefl {
namespace {

constexpr int kShift = 16;                       // bucket = |x| bits >> 16
constexpr uint32_t kBuckets = 1u << (31 - kShift);  // sign bit is clear

struct Candidate {
  uint32_t bits;
  uint32_t index;
};

// Magnitude bits at or above this are Inf or NaN.
constexpr uint32_t kNonFiniteBucket = 0x7f800000u >> kShift;

// The bucket holding the k-th largest magnitude, and how many entries lie
// in higher buckets (all of which are kept).
struct Split {
  uint32_t bucket = 0;
  uint64_t above = 0;
  bool finite = true;
};

Split FindBucket(const float* x, uint64_t d, uint64_t k) {
  std::vector<uint32_t> hist(kBuckets, 0);
  for (uint64_t i = 0; i < d; ++i) ++hist[MagnitudeBits(x[i]) >> kShift];
  Split s;
  for (uint32_t b = kNonFiniteBucket; b < kBuckets; ++b)
    if (hist[b] != 0) s.finite = false;
  for (uint32_t b = kBuckets; b-- > 0;) {
    if (s.above + hist[b] >= k) {
      s.bucket = b;
      return s;
    }
    s.above += hist[b];
  }
  return s;  // unreachable for k <= d
}

}  // namespace

bool RadixTopKTwoPass(const float* x, uint64_t d, uint64_t k,
                      SparseDelta* result) {
  SparseDelta out;
  out.dim = d;
  k = std::min(k, d);
  const Split split = FindBucket(x, d, std::max<uint64_t>(k, 1));
  if (!split.finite) return false;
  if (k == 0) {
    *result = std::move(out);
    return true;
  }

  // Second pass, branch-free: every entry is written, and the write
  // position advances only when the entry belongs to the list.
  std::vector<uint32_t> above(split.above + 1);
  std::vector<Candidate> cand;
  cand.reserve(std::min<uint64_t>(d, 4 * (k - split.above) + 64));
  uint64_t n_above = 0;
  for (uint64_t i = 0; i < d; ++i) {
    const uint32_t bits = MagnitudeBits(x[i]);
    const uint32_t bucket = bits >> kShift;
    above[n_above] = static_cast<uint32_t>(i);
    n_above += bucket > split.bucket;
    if (bucket == split.bucket) cand.push_back({bits, static_cast<uint32_t>(i)});
  }
  above.resize(n_above);

  // The `need` largest candidates, ties to the lower index, then in index
  // order to merge with the (ascending) indices above the bucket.
  const uint64_t need = k - n_above;
  auto larger = [](const Candidate& a, const Candidate& b) {
    return a.bits != b.bits ? a.bits > b.bits : a.index < b.index;
  };
  if (need < cand.size())
    std::nth_element(cand.begin(), cand.begin() + need, cand.end(), larger);
  cand.resize(need);
  std::sort(cand.begin(), cand.end(),
            [](const Candidate& a, const Candidate& b) { return a.index < b.index; });

  out.indices.resize(k);
  auto from_cand = [](const Candidate& c) { return c.index; };
  std::vector<uint32_t> chosen(need);
  std::transform(cand.begin(), cand.end(), chosen.begin(), from_cand);
  std::merge(above.begin(), above.end(), chosen.begin(), chosen.end(),
             out.indices.begin());
  out.values.resize(k);
  for (uint64_t j = 0; j < k; ++j) out.values[j] = x[out.indices[j]];
  *result = std::move(out);
  return true;
}

namespace {

// Below this the two-pass select costs next to nothing anyway.
constexpr uint64_t kMinSampledDim = uint64_t{1} << 15;
// Half-width of the bracket in standard deviations of the sample count:
// a miss (then the two-pass fallback) is a 4-sigma event per side.
constexpr double kMarginSd = 4.0;

// Entries with magnitude bits > hi are surely among the k; those >= lo
// include the k-th. keep, cand: about how many entries are >= lo, and how
// many of them are <= hi.
struct Band {
  uint32_t lo = 0;
  uint32_t hi = 0x7fffffffu;  // nothing is above: no sure entries
  uint64_t keep = 0;
  uint64_t cand = 0;
};

// Brackets the k-th largest magnitude from a sample of whole cache lines
// (16 floats) at fixed pseudo-random positions: the same on every call,
// since the result never depends on them, only the time does.
Band EstimateBand(const float* x, uint64_t d, uint64_t k) {
  constexpr uint64_t kLine = 16;
  const uint64_t lines = std::clamp<uint64_t>(d / 2048, 64, 2048);
  const uint64_t s = lines * kLine;
  std::vector<uint32_t> smp(s);
  uint64_t state = 0x9e3779b97f4a7c15ull;
  for (uint64_t l = 0; l < lines; ++l) {
    state ^= state << 13;  // xorshift64
    state ^= state >> 7;
    state ^= state << 17;
    // A start in [0, d - kLine]: the top 32 bits scaled to the range.
    const uint64_t start = ((state >> 32) * (d - kLine + 1)) >> 32;
    for (uint64_t i = 0; i < kLine; ++i)
      smp[l * kLine + i] = MagnitudeBits(x[start + i]);
  }
  const double q = static_cast<double>(k) / d;
  const double mean = q * s;
  const double margin = kMarginSd * std::sqrt(s * q * (1 - q)) + 2;
  const double r_hi = std::floor(mean - margin);  // ranks, 0 = largest
  const double r_lo = std::ceil(mean + margin);
  Band band;
  auto desc = std::greater<uint32_t>();
  auto first = smp.begin();
  if (r_hi >= 0) {
    const auto rh = smp.begin() + static_cast<int64_t>(r_hi);
    std::nth_element(smp.begin(), rh, smp.end(), desc);
    band.hi = *rh;
    first = rh + 1;
  }
  band.keep = d;
  if (r_lo < s) {
    const auto rl = smp.begin() + static_cast<int64_t>(r_lo);
    std::nth_element(first, rl, smp.end(), desc);
    band.lo = *rl;
    band.keep = static_cast<uint64_t>((r_lo + 1) / s * d);
  }
  band.cand = static_cast<uint64_t>(
      (std::min<double>(r_lo, s) - std::max(r_hi, 0.0) + 1) / s * d);
  return band;
}

constexpr uint64_t kBlock = 4096;  // entries between capacity checks

// Room for `more` further entries after the first `used` of *v (grown by
// doubling: an estimate that was low costs a copy, not a wrong answer).
template <typename T>
T* Room(std::vector<T>* v, uint64_t used, uint64_t more) {
  if (v->size() < used + more)
    v->resize(std::max<uint64_t>(2 * v->size(), used + more));
  return v->data();
}

using radix_internal::HaveAvx2;
using radix_internal::KeepBlock;
using radix_internal::KeepBlockAvx2;

std::atomic<bool> simd_allowed{true};

// The single pass over the data. The list lives in the output's own
// vectors, so the winners need no copy.
uint64_t KeepAtLeast(const float* x, uint64_t d, const Band& band,
                     SparseDelta* out) {
  out->indices.resize(std::min(d, band.keep + band.keep / 8 + kBlock));
  out->values.resize(out->indices.size());
  const bool simd = simd_allowed.load(std::memory_order_relaxed) && HaveAvx2();
  uint64_t n = 0;
  for (uint64_t start = 0; start < d; start += kBlock) {
    const uint64_t end = std::min(d, start + kBlock);
    uint32_t* idx = Room(&out->indices, n, end - start);
    float* val = Room(&out->values, n, end - start);
    n = simd ? KeepBlockAvx2(x, start, end, band.lo, idx, val, n)
             : KeepBlock(x, start, end, band.lo, idx, val, n);
  }
  return n;
}

enum class Outcome { kDone, kNonFinite, kMissed };

// Of the kept list's first n entries, keeps those with magnitude bits > t
// and the first `ties` equal to t (the lower indices: the list is in index
// order), in place; returns how many.
uint64_t Compact(uint64_t n, uint32_t t, uint64_t ties, SparseDelta* out) {
  uint32_t* idx = out->indices.data();
  float* val = out->values.data();
  uint64_t w = 0, taken = 0;
  for (uint64_t j = 0; j < n; ++j) {  // w <= j
    const uint32_t b = MagnitudeBits(val[j]);
    const bool tie = b == t;
    const bool keep = (b > t) | (tie & (taken < ties));
    idx[w] = idx[j];
    val[w] = val[j];
    w += keep;
    taken += tie & keep;
  }
  return w;
}

// The r-th largest (1 <= r <= n) of v[0..n), all of them in [lo, hi], and
// how many are larger: a histogram of (v - lo) over at most 4096 buckets
// finds the bucket, an exact selection inside it the value.
struct Nth {
  uint32_t value;
  uint64_t larger;
};

Nth NthLargest(const uint32_t* v, uint64_t n, uint64_t r, uint32_t lo,
               uint32_t hi) {
  constexpr uint32_t kSelectBuckets = 4096;
  int shift = 0;
  while (((hi - lo) >> shift) >= kSelectBuckets) ++shift;
  std::vector<uint32_t> hist(((hi - lo) >> shift) + 1, 0);
  for (uint64_t j = 0; j < n; ++j) ++hist[(v[j] - lo) >> shift];
  uint64_t larger = 0;
  uint32_t bucket = static_cast<uint32_t>(hist.size() - 1);
  while (larger + hist[bucket] < r) larger += hist[bucket--];
  std::vector<uint32_t> in;
  in.reserve(hist[bucket]);
  for (uint64_t j = 0; j < n; ++j)
    if (((v[j] - lo) >> shift) == bucket) in.push_back(v[j]);
  const auto nth = in.begin() + (r - larger - 1);
  std::nth_element(in.begin(), nth, in.end(), std::greater<uint32_t>());
  const uint32_t value = *nth;
  larger += static_cast<uint64_t>(
      std::count_if(in.begin(), nth, [value](uint32_t b) { return b > value; }));
  return {value, larger};
}

// The sampled select; kMissed when the bracket did not hold the k-th
// magnitude (the caller falls back), *result untouched unless kDone.
Outcome SampledTopK(const float* x, uint64_t d, uint64_t k,
                    SparseDelta* result) {
  const Band band = EstimateBand(x, d, k);
  SparseDelta out;
  out.dim = d;
  const uint64_t n = KeepAtLeast(x, d, band, &out);

  // Every Inf or NaN is kept (its bits exceed any finite lo), so one scan
  // of the list finds them; it also gathers the candidates' magnitudes
  // (those <= hi; the rest are sure winners).
  std::vector<uint32_t> cand(std::min(n, band.cand + band.cand / 4 + kBlock));
  uint64_t n_cand = 0;
  uint32_t acc = 0;
  const float* val = out.values.data();
  for (uint64_t start = 0; start < n; start += kBlock) {
    const uint64_t end = std::min(n, start + kBlock);
    uint32_t* c = Room(&cand, n_cand, end - start);
    for (uint64_t j = start; j < end; ++j) {
      const uint32_t b = MagnitudeBits(val[j]);
      acc |= b + kNonFiniteCarry;
      c[n_cand] = b;
      n_cand += b <= band.hi;
    }
  }
  if (acc & kCarryBit) return Outcome::kNonFinite;
  const uint64_t above = n - n_cand;
  if (n < k || above > k) return Outcome::kMissed;

  // The exact threshold t: the need-th largest candidate; of the
  // candidates equal to t only `ties` are kept.
  const uint64_t need = k - above;
  uint32_t t = band.hi;
  uint64_t ties = 0;
  if (need > 0) {
    const Nth nth = NthLargest(cand.data(), n_cand, need, band.lo, band.hi);
    t = nth.value;
    ties = need - nth.larger;
  }
  if (Compact(n, t, ties, &out) != k) return Outcome::kMissed;  // never
  out.indices.resize(k);
  out.values.resize(k);
  *result = std::move(out);
  return Outcome::kDone;
}

}  // namespace

bool RadixTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* result) {
  k = std::min(k, d);
  if (k == 0 || k == d) return TrivialTopK(x, d, k, result);
  if (d >= kMinSampledDim) {
    switch (SampledTopK(x, d, k, result)) {
      case Outcome::kDone:
        return true;
      case Outcome::kNonFinite:
        return false;
      case Outcome::kMissed:
        break;
    }
  }
  return RadixTopKTwoPass(x, d, k, result);
}

void SetRadixTopKSimd(bool allowed) {
  simd_allowed.store(allowed, std::memory_order_relaxed);
}

}  // namespace shefl
