// The codec's size model: the exact encoded size of a delta, the form the
// encoder picks, bounds, and the largest k a byte budget carries.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/sparse/codec.h"
#include "common/sparse/codec_internal.h"
#include "common/sparse/half.h"
#include "common/sparse/index_codes.h"
#include "common/sparse/varint.h"

namespace shefl {
namespace {

using codec_internal::BitmapBytes;
using codec_internal::HeaderBytes;

// The data-dependent index sections in one pass: the varint-gap bytes and
// the Golomb-Rice bits with parameter b. Gaps are taken modulo 2^32, which
// is exact for valid (ascending, < 2^32) input. Branch-free, so it
// vectorises.
struct GapSizes {
  uint64_t varint_bytes = 0;
  uint64_t rice_bits = 0;
};

GapSizes MeasureGaps(const std::vector<uint32_t>& indices, unsigned b) {
  uint64_t varint = 0, quotients = 0;
  uint32_t next = 0;  // idx_{i-1} + 1, or 0 before the first index
  for (uint32_t idx : indices) {
    const uint32_t gap = idx - next;
    varint += VarintLength32(gap);
    quotients += gap >> b;
    next = idx + 1;
  }
  const uint64_t k = indices.size();
  return {varint, k * (b + 1) + quotients};
}

// Tie order of the formats: the first of equal sizes is taken. Elias-Fano
// before Golomb-Rice: when they tie, its decoder has no serial dependency.
constexpr IndexFormat kPreference[] = {
    IndexFormat::kVarintGaps, IndexFormat::kBitmap, IndexFormat::kEliasFano,
    IndexFormat::kGolombRice, IndexFormat::kDense};

// Marks a form that does not apply (dense with k != d).
constexpr uint64_t kNotApplicable = UINT64_MAX;

// The index-section bytes of every form, by format number.
struct IndexSizes {
  uint64_t bytes[kNumIndexFormats];
  uint64_t of(IndexFormat f) const { return bytes[static_cast<uint8_t>(f)]; }
};

IndexSizes MeasureIndexForms(uint64_t d, const std::vector<uint32_t>& indices) {
  const uint64_t k = indices.size();
  // k = d: the indices are 0..d-1, every gap 0 (b = 0): no pass needed.
  const GapSizes gaps = k == d ? GapSizes{k, k}
                               : MeasureGaps(indices, IndexCodeParameter(d, k));
  IndexSizes s;
  s.bytes[static_cast<uint8_t>(IndexFormat::kVarintGaps)] = gaps.varint_bytes;
  s.bytes[static_cast<uint8_t>(IndexFormat::kBitmap)] = BitmapBytes(d);
  s.bytes[static_cast<uint8_t>(IndexFormat::kGolombRice)] =
      BitsToBytes(gaps.rice_bits);
  s.bytes[static_cast<uint8_t>(IndexFormat::kEliasFano)] =
      BitsToBytes(EliasFanoBits(d, k));
  s.bytes[static_cast<uint8_t>(IndexFormat::kDense)] =
      k == d ? 0 : kNotApplicable;
  return s;
}

// The most bytes k gap varints can take when their sum is at most d - k
// (idx_{k-1} = sum of gaps + k - 1 <= d - 1). Lengthening one gap from L to
// L+1 bytes costs 2^(7L) - 2^(7(L-1)) of the slack, more for every L, so
// spending the slack on the cheapest lengthenings first is optimal.
uint64_t WorstCaseVarintGapBytes(uint64_t d, uint64_t k) {
  if (k == 0) return 0;
  uint64_t bytes = k;
  uint64_t slack = d - k;
  uint64_t prev_threshold = 0;
  for (int len = 2; len <= 5; ++len) {  // gaps are < 2^32: at most 5 bytes
    const uint64_t threshold = uint64_t{1} << (7 * (len - 1));
    const uint64_t step = threshold - prev_threshold;
    const uint64_t n = std::min(k, slack / step);
    bytes += n;
    if (n < k) break;
    slack -= n * step;
    prev_threshold = threshold;
  }
  return bytes;
}

// The bound for sets of exactly k entries: each form's worst case, the
// smallest of them (the encoder never exceeds any). Nondecreasing in k for
// k < d (every term is; Elias-Fano's k(b+1) + ((d-k) >> b) gains at least b
// per entry for each b); at k = d the dense form drops to no index bytes.
uint64_t UpperBoundForExactlyK(uint64_t d, uint64_t k, ValueType type) {
  uint64_t index_bytes = std::min({WorstCaseVarintGapBytes(d, k),
                                   BitmapBytes(d),
                                   BitsToBytes(EliasFanoBits(d, k))});
  if (k == d) index_bytes = 0;  // dense
  return HeaderBytes(d, k) + index_bytes + k * ValueTypeBytes(type);
}

}  // namespace

absl::StatusOr<ValueType> ParseValueType(const std::string& name) {
  if (name == "fp32") return ValueType::kFp32;
  if (name == "fp16") return ValueType::kFp16;
  if (name == "bf16") return ValueType::kBf16;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown value type \"", name, "\" (expected fp32, fp16 or bf16)"));
}

const char* ValueTypeName(ValueType type) {
  switch (type) {
    case ValueType::kFp32: return "fp32";
    case ValueType::kFp16: return "fp16";
    case ValueType::kBf16: return "bf16";
  }
  return "unknown";
}

const char* IndexFormatName(IndexFormat format) {
  switch (format) {
    case IndexFormat::kVarintGaps: return "varint";
    case IndexFormat::kBitmap: return "bitmap";
    case IndexFormat::kGolombRice: return "golomb-rice";
    case IndexFormat::kEliasFano: return "elias-fano";
    case IndexFormat::kDense: return "dense";
  }
  return "unknown";
}

uint64_t ValueTypeBytes(ValueType type) {
  return type == ValueType::kFp32 ? 4 : 2;
}

EncodingPlan PlanEncoding(uint64_t d, const std::vector<uint32_t>& indices,
                          ValueType type) {
  const uint64_t k = indices.size();
  const IndexSizes sizes = MeasureIndexForms(d, indices);
  EncodingPlan plan;
  plan.header_bytes = HeaderBytes(d, k);
  plan.index_bytes = kNotApplicable;
  for (IndexFormat f : kPreference) {
    if (sizes.of(f) < plan.index_bytes) {
      plan.format = f;
      plan.index_bytes = sizes.of(f);
    }
  }
  plan.value_bytes = k * ValueTypeBytes(type);
  return plan;
}

absl::StatusOr<EncodingPlan> PlanEncodingAs(
    uint64_t d, const std::vector<uint32_t>& indices, ValueType type,
    IndexFormat format) {
  const uint8_t f = static_cast<uint8_t>(format);
  if (f >= kNumIndexFormats) {
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown index format %d", f));
  }
  const uint64_t k = indices.size();
  const uint64_t bytes = MeasureIndexForms(d, indices).bytes[f];
  if (bytes == kNotApplicable) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "dense index format needs k == d (k=%d, d=%d)", k, d));
  }
  EncodingPlan plan;
  plan.format = format;
  plan.header_bytes = HeaderBytes(d, k);
  plan.index_bytes = bytes;
  plan.value_bytes = k * ValueTypeBytes(type);
  return plan;
}

uint64_t PredictEncodedSize(uint64_t d, const std::vector<uint32_t>& indices,
                            ValueType type) {
  return PlanEncoding(d, indices, type).total();
}

uint64_t PredictEncodedSizeUpperBound(uint64_t d, uint64_t k,
                                      ValueType type) {
  k = std::min(k, d);
  const uint64_t exact = UpperBoundForExactlyK(d, k, type);
  // Sets of fewer entries are covered by nondecreasing bounds below d; at
  // k = d the dense form may be smaller than a set of d - 1 entries.
  if (k == d && d > 0) {
    return std::max(exact, UpperBoundForExactlyK(d, d - 1, type));
  }
  return exact;
}

absl::StatusOr<uint64_t> LargestKForBudget(uint64_t d, uint64_t budget_bytes,
                                           ValueType type) {
  if (d > kCodecMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dim %d exceeds the uint32 index range", d));
  }
  const uint64_t empty = PredictEncodedSizeUpperBound(d, 0, type);
  if (empty > budget_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "budget of %d bytes is below the %d bytes of an empty delta",
        budget_bytes, empty));
  }
  // The bound is nondecreasing in k, so binary-search the last k that
  // fits: invariant fits(lo), !fits(hi + 1).
  uint64_t lo = 0, hi = d;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo + 1) / 2;
    if (PredictEncodedSizeUpperBound(d, mid, type) <= budget_bytes) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

double EntropyFloorBits(uint64_t d, uint64_t k) {
  if (k == 0 || k >= d) return 0.0;
  const double n = static_cast<double>(d);
  const double r = static_cast<double>(k);
  return (std::lgamma(n + 1) - std::lgamma(r + 1) - std::lgamma(n - r + 1)) /
         std::log(2.0);
}

}  // namespace shefl
