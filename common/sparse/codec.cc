#include "common/sparse/codec.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/sparse/half.h"
#include "common/sparse/index_codes.h"
#include "common/sparse/varint.h"

namespace shefl {
namespace {

constexpr uint64_t kFixedHeaderBytes = 3;  // magic/version, type, format

uint64_t BitmapBytes(uint64_t d) { return (d + 7) / 8; }

uint64_t HeaderBytes(uint64_t d, uint64_t k) {
  return kFixedHeaderBytes + VarintLength(d) + VarintLength(k);
}

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

absl::Status ValidateForEncoding(const SparseDelta& delta) {
  if (delta.indices.size() != delta.values.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "sparse delta has %d indices but %d values", delta.indices.size(),
        delta.values.size()));
  }
  if (delta.dim > kCodecMaxDim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dim %d exceeds the uint32 index range", delta.dim));
  }
  const std::vector<uint32_t>& idx = delta.indices;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] >= delta.dim) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "index %d at position %d out of range [0, %d)", idx[i], i,
          delta.dim));
    }
    if (i > 0 && idx[i] <= idx[i - 1]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "indices not strictly ascending at position %d: %d after %d (%s)",
          i, idx[i], idx[i - 1],
          idx[i] == idx[i - 1] ? "duplicate" : "descending"));
    }
  }
  return absl::OkStatus();
}

absl::Status BadValue(const SparseDelta& delta, size_t i, ValueType type) {
  const float v = delta.values[i];
  const char* what = std::isnan(v)   ? "is NaN"
                     : std::isinf(v) ? "is Inf"
                                     : nullptr;
  std::string why =
      what ? what
           : absl::StrCat(v, " overflows ", ValueTypeName(type));
  return absl::InvalidArgumentError(absl::StrFormat(
      "value at position %d (index %d) %s", i, delta.indices[i], why));
}

void PutU16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}

uint16_t GetU16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}

void PutU32(uint8_t* p, uint32_t v) {
  for (int b = 0; b < 4; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}

uint32_t GetU32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

uint8_t* WriteIndices(const SparseDelta& delta, IndexFormat format,
                      uint8_t* p) {
  const std::vector<uint32_t>& idx = delta.indices;
  switch (format) {
    case IndexFormat::kVarintGaps: {
      uint32_t next = 0;
      for (uint32_t i : idx) {
        p = PutVarint(p, i - next);
        next = i + 1;
      }
      return p;
    }
    case IndexFormat::kBitmap: {
      const uint64_t bytes = BitmapBytes(delta.dim);
      std::memset(p, 0, bytes);
      for (uint32_t i : idx) p[i >> 3] |= uint8_t(1u << (i & 7));
      return p + bytes;
    }
    case IndexFormat::kGolombRice:
      return WriteGolombRice(idx.data(), idx.size(),
                             IndexCodeParameter(delta.dim, idx.size()), p);
    case IndexFormat::kEliasFano:
      return WriteEliasFano(idx.data(), idx.size(), delta.dim, p);
    case IndexFormat::kDense:
      return p;
  }
  return p;
}

// Writes the values; on one that does not fit, stores its position in
// *bad and returns false.
bool WriteValues(const std::vector<float>& values, ValueType type, uint8_t* p,
                 size_t* bad) {
  const size_t k = values.size();
  if (type == ValueType::kFp32) {
    // Check, then copy: two loops without an early exit vectorise.
    uint32_t any_bad = 0;
    for (size_t i = 0; i < k; ++i)
      any_bad |= FloatBitsNonFinite(FloatBits(values[i])) ? 1u : 0u;
    if (any_bad != 0) {
      *bad = 0;
      while (!FloatBitsNonFinite(FloatBits(values[*bad]))) ++*bad;
      return false;
    }
    for (size_t i = 0; i < k; ++i) PutU32(p + 4 * i, FloatBits(values[i]));
    return true;
  }
  const bool fp16 = type == ValueType::kFp16;
  for (size_t i = 0; i < k; ++i) {
    uint16_t h = 0;
    const bool ok = fp16 ? FloatToHalf(values[i], &h)
                         : FloatToBfloat16(values[i], &h);
    if (!ok) {
      *bad = i;
      return false;
    }
    PutU16(p + 2 * i, h);
  }
  return true;
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

namespace {

absl::Status EncodeWithPlan(const SparseDelta& delta, ValueType type,
                            const EncodingPlan& plan, std::string* out) {
  out->resize(plan.total());
  uint8_t* p = reinterpret_cast<uint8_t*>(out->data());
  *p++ = kCodecMagicVersion;
  *p++ = static_cast<uint8_t>(type);
  *p++ = static_cast<uint8_t>(plan.format);
  p = PutVarint(p, delta.dim);
  p = PutVarint(p, delta.indices.size());
  p = WriteIndices(delta, plan.format, p);
  size_t bad = 0;
  if (!WriteValues(delta.values, type, p, &bad)) {
    out->clear();
    return BadValue(delta, bad, type);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status EncodeSparseDeltaTo(const SparseDelta& delta, ValueType type,
                                 std::string* out) {
  out->clear();
  if (absl::Status s = ValidateForEncoding(delta); !s.ok()) return s;
  return EncodeWithPlan(delta, type,
                        PlanEncoding(delta.dim, delta.indices, type), out);
}

absl::Status EncodeSparseDeltaAs(const SparseDelta& delta, ValueType type,
                                 IndexFormat format, std::string* out) {
  out->clear();
  if (absl::Status s = ValidateForEncoding(delta); !s.ok()) return s;
  auto plan = PlanEncodingAs(delta.dim, delta.indices, type, format);
  if (!plan.ok()) return plan.status();
  return EncodeWithPlan(delta, type, *plan, out);
}

absl::StatusOr<std::string> EncodeSparseDelta(const SparseDelta& delta,
                                              ValueType type) {
  std::string out;
  if (absl::Status s = EncodeSparseDeltaTo(delta, type, &out); !s.ok()) {
    return s;
  }
  return out;
}

namespace {

// Decoding state: a cursor over the input and the error vocabulary.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  uint64_t left() const { return static_cast<uint64_t>(end - p); }
};

absl::Status Invalid(const std::string& msg) {
  return absl::InvalidArgumentError(absl::StrCat("sparse delta: ", msg));
}

absl::Status VarintError(VarintResult r, const std::string& where) {
  switch (r) {
    case VarintResult::kTruncated: return Invalid("truncated " + where);
    case VarintResult::kOverflow: return Invalid("varint overflow in " + where);
    case VarintResult::kNonCanonical:
      return Invalid("non-canonical (overlong) varint in " + where);
    case VarintResult::kOk: break;
  }
  return absl::OkStatus();
}

absl::Status ReadHeader(Reader* r, uint64_t expected_dim, uint64_t max_k,
                        ValueType* type, IndexFormat* format, uint64_t* d,
                        uint64_t* k) {
  if (r->left() < kFixedHeaderBytes) {
    return Invalid(absl::StrFormat("truncated header (%d bytes)", r->left()));
  }
  const uint8_t magic = r->p[0], vt = r->p[1], fmt = r->p[2];
  r->p += kFixedHeaderBytes;
  if ((magic >> 4) != (kCodecMagicVersion >> 4)) {
    return Invalid(absl::StrFormat("bad magic byte 0x%02x (expected 0x%02x)",
                                   magic, kCodecMagicVersion));
  }
  if ((magic & 0xf) != (kCodecMagicVersion & 0xf)) {
    return Invalid(absl::StrFormat("unsupported version %d (expected %d)",
                                   magic & 0xf, kCodecMagicVersion & 0xf));
  }
  if (vt > static_cast<uint8_t>(ValueType::kBf16)) {
    return Invalid(absl::StrFormat("unknown value type %d", vt));
  }
  if (fmt >= kNumIndexFormats) {
    return Invalid(absl::StrFormat(
        "unknown index format %d (this decoder knows 0-%d: varint, bitmap, "
        "golomb-rice, elias-fano, dense)",
        fmt, kNumIndexFormats - 1));
  }
  *type = static_cast<ValueType>(vt);
  *format = static_cast<IndexFormat>(fmt);
  VarintResult vr = GetVarint(&r->p, r->end, kMaxVarint64Bytes, kCodecMaxDim, d);
  if (vr != VarintResult::kOk) return VarintError(vr, "header (d)");
  if (*d != expected_dim) {
    return Invalid(absl::StrFormat("dimension mismatch: d=%d, expected %d",
                                   *d, expected_dim));
  }
  vr = GetVarint(&r->p, r->end, kMaxVarint64Bytes, UINT64_MAX, k);
  if (vr != VarintResult::kOk) return VarintError(vr, "header (k)");
  if (*k > *d) {
    return Invalid(absl::StrFormat("k=%d exceeds d=%d", *k, *d));
  }
  if (*k > max_k) {
    return Invalid(absl::StrFormat("k=%d above max_k=%d", *k, max_k));
  }
  return absl::OkStatus();
}

absl::Status ReadVarintGaps(Reader* r, uint64_t d, uint64_t k,
                            std::vector<uint32_t>* out) {
  if (r->left() < k) {  // every gap takes a byte: bounds the allocation
    return Invalid(absl::StrFormat(
        "truncated index section (%d bytes for %d varint gaps)", r->left(), k));
  }
  out->resize(k);
  uint64_t next = 0;
  for (uint64_t i = 0; i < k; ++i) {
    uint64_t gap;
    if (r->p < r->end && *r->p < 0x80) {
      gap = *r->p++;
    } else {
      const VarintResult vr = GetVarint(&r->p, r->end, 5, UINT32_MAX, &gap);
      if (vr != VarintResult::kOk) {
        return VarintError(vr, absl::StrCat("index section at position ", i));
      }
    }
    const uint64_t idx = next + gap;
    if (idx >= d) {
      return Invalid(absl::StrFormat(
          "index %d at position %d out of range [0, %d)", idx, i, d));
    }
    (*out)[i] = static_cast<uint32_t>(idx);
    next = idx + 1;
  }
  return absl::OkStatus();
}

absl::Status ReadBitmap(Reader* r, uint64_t d, uint64_t k,
                        std::vector<uint32_t>* out) {
  const uint64_t bytes = BitmapBytes(d);
  if (r->left() < bytes) {
    return Invalid(absl::StrFormat(
        "truncated index section (bitmap needs %d bytes, %d left)", bytes,
        r->left()));
  }
  const uint8_t* bm = r->p;
  r->p += bytes;
  if (d % 8 != 0 && (bm[bytes - 1] >> (d % 8)) != 0) {
    const int bit = 31 - __builtin_clz(bm[bytes - 1]);
    return Invalid(absl::StrFormat("bitmap index %d out of range [0, %d)",
                                   (bytes - 1) * 8 + bit, d));
  }
  uint64_t count = 0;
  for (uint64_t i = 0; i < bytes; ++i) count += __builtin_popcount(bm[i]);
  if (count != k) {
    return Invalid(absl::StrFormat(
        "count mismatch: bitmap has %d bits set, header k=%d", count, k));
  }
  out->resize(k);
  uint32_t* o = out->data();
  for (uint64_t i = 0; i < bytes; ++i) {
    for (uint32_t b = bm[i]; b != 0; b &= b - 1) {
      *o++ = static_cast<uint32_t>(i * 8 + __builtin_ctz(b));
    }
  }
  return absl::OkStatus();
}

// Golomb-Rice or Elias-Fano, through common/sparse/index_codes.h.
absl::Status ReadBitCode(Reader* r, IndexFormat format, uint64_t d,
                         uint64_t k, std::vector<uint32_t>* out) {
  uint64_t used = 0;
  const absl::Status s =
      format == IndexFormat::kGolombRice
          ? ReadGolombRice(r->p, r->end, d, k, out, &used)
          : ReadEliasFano(r->p, r->end, d, k, out, &used);
  if (!s.ok()) return Invalid(std::string(s.message()));
  r->p += used;
  return absl::OkStatus();
}

// No index section: k = d and the indices are 0..d-1. The values must be
// there before d indices are allocated.
absl::Status ReadDense(const Reader& r, ValueType type, uint64_t d,
                       uint64_t k, std::vector<uint32_t>* out) {
  if (k != d) {
    return Invalid(absl::StrFormat(
        "dense index format needs k == d (k=%d, d=%d)", k, d));
  }
  const uint64_t need = k * ValueTypeBytes(type);
  if (r.left() < need) {
    return Invalid(absl::StrFormat(
        "truncated value section (%d bytes for %d dense %s values, %d left)",
        need, k, ValueTypeName(type), r.left()));
  }
  out->resize(k);
  for (uint64_t i = 0; i < k; ++i) (*out)[i] = static_cast<uint32_t>(i);
  return absl::OkStatus();
}

absl::Status ReadIndices(Reader* r, ValueType type, IndexFormat format,
                         uint64_t d, uint64_t k, std::vector<uint32_t>* out) {
  switch (format) {
    case IndexFormat::kVarintGaps: return ReadVarintGaps(r, d, k, out);
    case IndexFormat::kBitmap: return ReadBitmap(r, d, k, out);
    case IndexFormat::kGolombRice:
    case IndexFormat::kEliasFano: return ReadBitCode(r, format, d, k, out);
    case IndexFormat::kDense: return ReadDense(*r, type, d, k, out);
  }
  return Invalid("unknown index format");  // ReadHeader refused it already
}

absl::Status ReadValues(Reader* r, ValueType type, SparseDelta* delta) {
  const uint64_t k = delta->indices.size();
  const uint64_t need = k * ValueTypeBytes(type);
  if (r->left() < need) {
    return Invalid(absl::StrFormat(
        "truncated value section (%d bytes for %d %s values, %d left)", need,
        k, ValueTypeName(type), r->left()));
  }
  if (r->left() > need) {
    return Invalid(absl::StrFormat("%d trailing bytes after the value section",
                                   r->left() - need));
  }
  delta->values.resize(k);
  float* v = delta->values.data();
  const uint8_t* p = r->p;
  // One loop per type and no early exit, so each vectorises; a non-finite
  // value is looked for afterwards.
  switch (type) {
    case ValueType::kFp32:
      for (uint64_t i = 0; i < k; ++i) v[i] = BitsToFloat(GetU32(p + 4 * i));
      break;
    case ValueType::kFp16:
      for (uint64_t i = 0; i < k; ++i) v[i] = HalfToFloat(GetU16(p + 2 * i));
      break;
    case ValueType::kBf16:
      for (uint64_t i = 0; i < k; ++i)
        v[i] = Bfloat16ToFloat(GetU16(p + 2 * i));
      break;
  }
  uint32_t any_bad = 0;
  for (uint64_t i = 0; i < k; ++i)
    any_bad |= FloatBitsNonFinite(FloatBits(v[i])) ? 1u : 0u;
  if (any_bad != 0) {
    uint64_t i = 0;
    while (!FloatBitsNonFinite(FloatBits(v[i]))) ++i;
    return Invalid(absl::StrFormat("%s value at position %d (index %d)",
                                   std::isnan(v[i]) ? "NaN" : "Inf", i,
                                   delta->indices[i]));
  }
  r->p += need;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SparseDelta> DecodeSparseDelta(std::string_view bytes,
                                              uint64_t expected_dim,
                                              uint64_t max_k) {
  const auto* begin = reinterpret_cast<const uint8_t*>(bytes.data());
  Reader r{begin, begin + bytes.size()};
  ValueType type = ValueType::kFp32;
  IndexFormat format = IndexFormat::kVarintGaps;
  uint64_t d = 0, k = 0;
  absl::Status s = ReadHeader(&r, expected_dim, max_k, &type, &format, &d, &k);
  if (!s.ok()) return s;
  SparseDelta delta;
  delta.dim = d;
  s = ReadIndices(&r, type, format, d, k, &delta.indices);
  if (!s.ok()) return s;
  s = ReadValues(&r, type, &delta);
  if (!s.ok()) return s;
  return delta;
}

}  // namespace shefl
