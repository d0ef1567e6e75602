// The codec's encoder: a valid sparse delta into the bytes of the form
// its plan (codec_size.cc) picks.
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
using codec_internal::PutU16;
using codec_internal::PutU32;

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

}  // namespace shefl
