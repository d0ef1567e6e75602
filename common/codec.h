// The wire encoding of a SparseDelta (DESIGN.md section 4). Pure C++, no
// Torch, so both binaries and the byte accounting can use it.
//
// Byte layout, version 1 (all multi-byte values little-endian):
//
//   offset  size      field
//   0       1         0xD1: magic 0xD in the high nibble, version 1 in the low
//   1       1         value type: 0 = fp32, 1 = fp16, 2 = bf16
//   2       1         index format: 0 = varint gaps, 1 = bitmap
//   3       1..5      d, the dense length, unsigned LEB128 (d <= 2^32)
//   ..      1..5      k, the number of kept entries, unsigned LEB128 (k <= d)
//   ..      I         index section, one of
//                       varint gaps: k unsigned LEB128 varints g_0..g_{k-1},
//                         g_0 = idx_0 and g_i = idx_i - idx_{i-1} - 1, so a
//                         run of adjacent indices costs one 0x00 byte each;
//                       bitmap: ceil(d/8) bytes; index i is bit (i mod 8),
//                         least significant first, of byte floor(i/8); bits
//                         at positions >= d are zero.
//   ..      k*w       values in index order, w = 4 (fp32), 2 (fp16 or bf16).
//
// The encoder picks the smaller index section (ties go to varint gaps), so
// the size is a pure function of (d, indices, value type), known before
// encoding: PredictEncodedSize. Both index forms are ascending and unique by
// construction (a gap cannot be negative, a bit cannot be set twice), so the
// decoder never sees a duplicate or descending index; it accepts either form
// but only canonical (shortest) varints, and everything it accepts is a
// valid SparseDelta.
#ifndef SHEFL_COMMON_CODEC_H_
#define SHEFL_COMMON_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sparse_delta.h"

namespace shefl {

constexpr uint8_t kCodecMagicVersion = 0xD1;
constexpr uint64_t kCodecMaxDim = uint64_t{1} << 32;  // indices are uint32

enum class ValueType : uint8_t { kFp32 = 0, kFp16 = 1, kBf16 = 2 };
enum class IndexFormat : uint8_t { kVarintGaps = 0, kBitmap = 1 };

// "fp32" | "fp16" | "bf16" (CompressionConfig::value_type).
absl::StatusOr<ValueType> ParseValueType(const std::string& name);
const char* ValueTypeName(ValueType type);
const char* IndexFormatName(IndexFormat format);
// Bytes one value takes on the wire.
uint64_t ValueTypeBytes(ValueType type);

// How one SparseDelta will be laid out; the sections sum to the exact size.
struct EncodingPlan {
  IndexFormat format = IndexFormat::kVarintGaps;
  uint64_t header_bytes = 0;  // magic .. k
  uint64_t index_bytes = 0;
  uint64_t value_bytes = 0;
  uint64_t total() const { return header_bytes + index_bytes + value_bytes; }
};

// The plan for these indices (ascending, unique, < d, as the encoder
// requires; for other input the result is meaningless). O(k), no allocation.
EncodingPlan PlanEncoding(uint64_t d, const std::vector<uint32_t>& indices,
                          ValueType type);

// Exactly the size EncodeSparseDelta produces for these indices.
uint64_t PredictEncodedSize(uint64_t d, const std::vector<uint32_t>& indices,
                            ValueType type);

// The largest encoded size over all index sets of k entries of [0, d), for
// budgeting before top-k runs. O(1). Nondecreasing in k.
uint64_t PredictEncodedSizeUpperBound(uint64_t d, uint64_t k, ValueType type);

// The largest k in [0, d] with PredictEncodedSizeUpperBound(d, k) <=
// budget_bytes. InvalidArgument when not even k = 0 fits, or d > 2^32.
absl::StatusOr<uint64_t> LargestKForBudget(uint64_t d, uint64_t budget_bytes,
                                           ValueType type);

// log2(C(d, k)): the bits an ideal code needs to name k indices of d.
double EntropyFloorBits(uint64_t d, uint64_t k);

// Encodes delta. InvalidArgument (naming the position) when indices and
// values differ in length, d > 2^32, an index is >= d or not above its
// predecessor, a value is NaN/Inf, or a value overflows fp16/bf16.
absl::StatusOr<std::string> EncodeSparseDelta(const SparseDelta& delta,
                                              ValueType type);

// Same, into *out (its contents replaced, its capacity reused). On error
// *out is empty.
absl::Status EncodeSparseDeltaTo(const SparseDelta& delta, ValueType type,
                                 std::string* out);

// Decodes and validates. expected_dim is the receiver's own d for the
// model; max_k bounds what the sender may claim (and what is allocated).
// InvalidArgument whose message names what is wrong: bad magic, unsupported
// version, unknown value type / index format, truncated (with the section),
// varint overflow / non-canonical, d mismatch, k above max_k or d, index out
// of range, bitmap count mismatch, NaN/Inf value (with its position),
// trailing bytes.
absl::StatusOr<SparseDelta> DecodeSparseDelta(std::string_view bytes,
                                              uint64_t expected_dim,
                                              uint64_t max_k);

}  // namespace shefl

#endif  // SHEFL_COMMON_CODEC_H_
