#include "common/sparse/topk_threshold.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <vector>

#include "common/sparse/topk_shared.h"

namespace shefl {
namespace {

constexpr uint32_t kInfBits = 0x7f800000u;

// Step 1: the sample's magnitude bits, sorted descending.
std::vector<uint32_t> SortedSample(const float* x, uint64_t d, uint64_t s) {
  std::vector<uint32_t> sample(s);
  for (uint64_t j = 0; j < s; ++j)
    sample[j] = MagnitudeBits(x[ThresholdSamplePosition(j, s, d)]);
  std::sort(sample.begin(), sample.end(), std::greater<uint32_t>());
  return sample;
}

// Step 2. A sampled NaN or Inf must not lift t above the non-finite
// entries, which the compaction has to see as candidates like the GPU does.
uint32_t Threshold(const std::vector<uint32_t>& sorted, uint64_t rank) {
  if (rank >= sorted.size()) return 0;
  return std::min(sorted[rank], kInfBits);
}

struct Compaction {
  uint64_t count = 0;  // candidates seen, also past the capacity
  bool finite = true;
};

// Step 3: one pass; keys[0..capacity) receives the first candidates (the
// GPU's order differs, which the exact selection makes irrelevant).
Compaction Compact(const float* x, uint64_t d, uint32_t t, uint64_t capacity,
                   std::vector<uint64_t>* keys) {
  const int b = ThresholdIndexBits(d);
  keys->resize(capacity + 1);  // the last slot takes the writes past it
  uint64_t* out = keys->data();
  uint64_t n = 0;
  uint32_t acc = 0;
  for (uint64_t i = 0; i < d; ++i) {  // branch-free
    const uint32_t m = MagnitudeBits(x[i]);
    acc |= m + kNonFiniteCarry;
    out[std::min(n, capacity)] = ThresholdKey(m, static_cast<uint32_t>(i), b);
    n += m >= t;
  }
  return {n, (acc & kCarryBit) == 0};
}

// Step 5: the k largest keys, indices ascending, values gathered.
void SelectAndPack(const float* x, uint64_t d, std::vector<uint64_t>* keys,
                   uint64_t k, SparseDelta* out) {
  const int b = ThresholdIndexBits(d);
  auto first = keys->begin(), kth = first + static_cast<int64_t>(k);
  if (kth != keys->end()) std::nth_element(first, kth, keys->end(), std::greater<>());
  out->indices.resize(k);
  for (uint64_t j = 0; j < k; ++j) out->indices[j] = ThresholdKeyIndex((*keys)[j], b);
  std::sort(out->indices.begin(), out->indices.end());
  out->values.resize(k);
  for (uint64_t j = 0; j < k; ++j) out->values[j] = x[out->indices[j]];
}

}  // namespace

bool ThresholdTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* result,
                   ThresholdTopKStats* stats) {
  ThresholdTopKStats st;
  k = std::min(k, d);
  if (k == 0 || k == d) {
    if (stats) *stats = st;
    return TrivialTopK(x, d, k, result);
  }
  const uint64_t s = ThresholdSampleSize(d);
  st.sample = s;
  const std::vector<uint32_t> sorted = SortedSample(x, d, s);
  std::vector<uint64_t> keys;
  Compaction c;
  for (int attempt = 0;; ++attempt) {
    const uint64_t rank = ThresholdRank(k, d, s, attempt);
    const uint32_t t = Threshold(sorted, rank);
    uint64_t capacity = ThresholdCapacity(d, s, rank);
    ++st.attempts;
    c = Compact(x, d, t, capacity, &keys);
    if (!c.finite) {
      if (stats) *stats = st;
      return false;
    }
    if (c.count > capacity) {  // too many: the same t again, with room
      ++st.overflows;
      capacity = c.count;
      c = Compact(x, d, t, capacity, &keys);
    }
    if (c.count >= k) break;  // always at t = 0, where c = d
  }
  keys.resize(c.count);
  st.candidates = c.count;
  SparseDelta out;
  out.dim = d;
  SelectAndPack(x, d, &keys, k, &out);
  *result = std::move(out);
  if (stats) *stats = st;
  return true;
}

}  // namespace shefl
