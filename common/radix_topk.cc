#include "common/radix_topk.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace shefl {
namespace {

constexpr int kShift = 16;                       // bucket = |x| bits >> 16
constexpr uint32_t kBuckets = 1u << (31 - kShift);  // sign bit is clear

inline uint32_t MagnitudeBits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof(b));
  return b & 0x7fffffffu;
}

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

bool RadixTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* result) {
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

}  // namespace shefl
