// Fuzzes the sparse-delta decoder (common/sparse/codec.h) with the bytes an
// upload carries. The input is an encoded delta as it comes off the wire,
// so the seeds are real encoder output; the receiver's d is the one the
// input names (any other is refused before the body is read).
//
// Beyond "no crash, no sanitizer report", whatever the decoder accepts must
// be a valid SparseDelta, re-encode to the same bytes in the same index
// form (each of the five forms is canonical) and to a plan no larger when
// the encoder picks, decode back to itself, and, in the form the encoder
// picks, fit the budget bound the coordinator checks before it reads an
// upload.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/sparse/codec.h"
#include "common/sparse/half.h"
#include "common/sparse/varint.h"
#include "fuzz/fuzz_check.h"

namespace shefl {
namespace {

// The d the input declares, or a small default when it declares none.
uint64_t DeclaredDim(const uint8_t* data, size_t size) {
  const uint8_t* p = data + 3;
  uint64_t d = 0;
  if (size <= 3 ||
      GetVarint(&p, data + size, kMaxVarint64Bytes, kCodecMaxDim, &d) !=
          VarintResult::kOk)
    return 64;
  return d;
}

void CheckValid(const SparseDelta& delta, uint64_t d, uint64_t max_k) {
  FUZZ_CHECK(delta.dim == d);
  FUZZ_CHECK(delta.indices.size() == delta.values.size());
  FUZZ_CHECK(delta.nnz() <= max_k && delta.nnz() <= d);
  for (size_t i = 0; i < delta.nnz(); ++i) {
    FUZZ_CHECK(delta.indices[i] < d);
    FUZZ_CHECK(i == 0 || delta.indices[i] > delta.indices[i - 1]);
    FUZZ_CHECK(!FloatBitsNonFinite(FloatBits(delta.values[i])));
  }
}

void CheckRoundTrip(std::string_view input, const SparseDelta& delta) {
  const auto type = static_cast<ValueType>(input[1]);
  const auto format = static_cast<IndexFormat>(input[2]);
  const EncodingPlan plan = PlanEncoding(delta.dim, delta.indices, type);
  // The same form reproduces the input byte for byte, whichever it is.
  std::string same;
  FUZZ_CHECK(EncodeSparseDeltaAs(delta, type, format, &same).ok());
  FUZZ_CHECK(same == input);
  FUZZ_CHECK(plan.total() <= input.size());  // the pick is the smallest
  auto again = EncodeSparseDelta(delta, type);
  FUZZ_CHECK(again.ok());  // decoded values are finite and fit the type
  FUZZ_CHECK(again->size() == plan.total());
  FUZZ_CHECK(again->size() ==
             PredictEncodedSize(delta.dim, delta.indices, type));
  // Canonical input (the encoder's choice of index form) is reproduced
  // byte for byte; the decoder admits nothing the encoder would not make.
  if (format == plan.format) {
    FUZZ_CHECK(*again == input);
    FUZZ_CHECK(input.size() <=
               PredictEncodedSizeUpperBound(delta.dim, delta.nnz(), type));
  }
  auto back = DecodeSparseDelta(*again, delta.dim, delta.nnz());
  FUZZ_CHECK(back.ok());
  FUZZ_CHECK(back->indices == delta.indices);
  for (size_t i = 0; i < delta.nnz(); ++i)
    FUZZ_CHECK(FloatBits(back->values[i]) == FloatBits(delta.values[i]));
}

}  // namespace
}  // namespace shefl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shefl;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint64_t d = DeclaredDim(data, size);
  auto delta = DecodeSparseDelta(input, d, d);
  if (!delta.ok()) {
    FUZZ_CHECK(delta.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  CheckValid(*delta, d, d);
  CheckRoundTrip(input, *delta);
  // The budget is enforced: one entry fewer allowed refuses the same bytes.
  if (delta->nnz() > 0)
    FUZZ_CHECK(!DecodeSparseDelta(input, d, delta->nnz() - 1).ok());
  // A receiver with another d refuses it.
  FUZZ_CHECK(!DecodeSparseDelta(input, d + 1, d + 1).ok());
  return 0;
}
