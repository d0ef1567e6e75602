// The codec's decoder of untrusted bytes: every field checked before it
// is used, every error naming what and where.
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
using codec_internal::GetU16;
using codec_internal::GetU32;
using codec_internal::kFixedHeaderBytes;

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
