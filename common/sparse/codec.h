// The wire encoding of a SparseDelta (docs/DESIGN.md, "Wire format and byte
// accounting"). Pure C++, no
// Torch, so both binaries and the byte accounting can use it.
//
// Byte layout, version 1 (all multi-byte values little-endian):
//
//   offset  size      field
//   0       1         0xD1: magic 0xD in the high nibble, version 1 in the low
//   1       1         value type: 0 = fp32, 1 = fp16, 2 = bf16
//   2       1         index format, 0..4 (below)
//   3       1..5      d, the dense length, unsigned LEB128 (d <= 2^32)
//   ..      1..5      k, the number of kept entries, unsigned LEB128 (k <= d)
//   ..      I         index section, one of
//                       0 varint gaps: k unsigned LEB128 varints
//                         g_0..g_{k-1}, g_0 = idx_0 and g_i = idx_i -
//                         idx_{i-1} - 1, so a run of adjacent indices costs
//                         one 0x00 byte each;
//                       1 bitmap: ceil(d/8) bytes; index i is bit (i mod 8),
//                         least significant first, of byte floor(i/8); bits
//                         at positions >= d are zero;
//                       2 Golomb-Rice gaps and 3 Elias-Fano: the bit codes
//                         of common/sparse/index_codes.h, their parameter a
//                         function of (d, k), padded with 0 bits to a byte;
//                       4 dense (only when k = d): nothing; the indices are
//                         0..d-1 and only the values are sent.
//   ..      k*w       values in index order, w = 4 (fp32), 2 (fp16 or bf16).
//
// The encoder picks the smallest index section; on a tie the first of
// varint gaps, bitmap, Elias-Fano, Golomb-Rice, dense (Golomb-Rice is never
// longer than Elias-Fano, so Elias-Fano is taken only when they tie, and
// dense wins whenever k = d > 0). The size is thus a pure function of (d,
// indices, value type), known before encoding: PredictEncodedSize. Every
// form is ascending and unique by construction (a gap cannot be negative, a
// bit cannot be set twice, Elias-Fano's x_i = idx_i - i must not descend),
// so the decoder never yields a duplicate or descending index. It accepts
// any of the five forms, but each only in its canonical bytes (shortest
// varints, zero padding bits, exactly k set bits), so every index set has
// one encoding per form, and everything it accepts is a valid SparseDelta.
//
// Version: still 1. Formats 2-4 were added without changing a byte of what
// formats 0 and 1 mean, so an older decoder reads the forms it knows and
// refuses the new ones by name ("unknown index format 2"), as this one
// refuses formats above 4. The version nibble changes only when the meaning
// of an existing field does; a decoder refuses any version but its own.
// Thread-compatible: EncodingPlan is a plain value.
#ifndef SHEFL_COMMON_SPARSE_CODEC_H_
#define SHEFL_COMMON_SPARSE_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sparse/sparse_delta.h"

namespace shefl {

constexpr uint8_t kCodecMagicVersion = 0xD1;
constexpr uint64_t kCodecMaxDim = uint64_t{1} << 32;  // indices are uint32

enum class ValueType : uint8_t { kFp32 = 0, kFp16 = 1, kBf16 = 2 };
enum class IndexFormat : uint8_t {
  kVarintGaps = 0,
  kBitmap = 1,
  kGolombRice = 2,
  kEliasFano = 3,
  kDense = 4,
};
constexpr uint8_t kNumIndexFormats = 5;

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

// The plan in the given format rather than the smallest. InvalidArgument
// for kDense when k != d, or a format number that is not one of the five.
absl::StatusOr<EncodingPlan> PlanEncodingAs(
    uint64_t d, const std::vector<uint32_t>& indices, ValueType type,
    IndexFormat format);

// Exactly the size EncodeSparseDelta produces for these indices.
uint64_t PredictEncodedSize(uint64_t d, const std::vector<uint32_t>& indices,
                            ValueType type);

// An upper bound on the encoded size of every index set of at most k
// entries of [0, d), for budgeting before top-k runs: the smallest of the
// index forms' own worst cases (bitmap and Elias-Fano have a fixed size).
// O(1). Nondecreasing in k. Not proven tight, but codec_test finds a set
// that reaches it for every (d, k < d) it tries (one gap of d - k, or gaps
// that are multiples of 2^b long enough for 2-byte varints).

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

// Same, in the given index format rather than the smallest (tests,
// benchmarks and fuzz seeds: the decoder accepts every form). Also
// InvalidArgument for kDense when k != d.
absl::Status EncodeSparseDeltaAs(const SparseDelta& delta, ValueType type,
                                 IndexFormat format, std::string* out);

// Decodes and validates. expected_dim is the receiver's own d for the
// model; max_k bounds what the sender may claim (and what is allocated).
// InvalidArgument whose message names what is wrong: bad magic, unsupported
// version, unknown value type / index format, truncated (with the section),
// varint overflow / non-canonical, d mismatch, k above max_k or d, index out
// of range or not ascending, bitmap / Elias-Fano count mismatch, non-zero
// padding bits, dense format with k != d, NaN/Inf value (with its position),
// trailing bytes.
absl::StatusOr<SparseDelta> DecodeSparseDelta(std::string_view bytes,
                                              uint64_t expected_dim,
                                              uint64_t max_k);

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_CODEC_H_
