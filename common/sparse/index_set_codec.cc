#include "common/sparse/index_set_codec.h"

#include "absl/strings/str_cat.h"
#include "common/sparse/codec.h"

namespace shefl {

absl::StatusOr<std::string> EncodeIndexSet(
    uint64_t d, const std::vector<uint32_t>& indices) {
  SparseDelta set{d, indices, std::vector<float>(indices.size(), 0.0f)};
  auto encoded = EncodeSparseDelta(set, ValueType::kFp16);
  if (!encoded.ok()) return encoded.status();
  encoded->resize(encoded->size() - 2 * indices.size());
  return encoded;
}

absl::StatusOr<std::vector<uint32_t>> DecodeIndexSet(std::string_view bytes,
                                                     uint64_t d,
                                                     uint64_t max_k) {
  // The header says k; the zero values are put back before decoding. A
  // header that does not parse is refused by the decoder below, with zero
  // values appended for at most max_k entries.
  if (bytes.size() < 4 || static_cast<uint8_t>(bytes[1]) !=
                              static_cast<uint8_t>(ValueType::kFp16))
    return absl::InvalidArgumentError(
        "index set: not an fp16 codec header");
  // k is the second LEB128 after the three fixed bytes.
  size_t pos = 3;
  uint64_t fields[2] = {0, 0};
  for (uint64_t& field : fields) {
    int shift = 0;
    while (true) {
      if (pos >= bytes.size() || shift > 35)
        return absl::InvalidArgumentError("index set: truncated header");
      const uint8_t b = static_cast<uint8_t>(bytes[pos++]);
      field |= static_cast<uint64_t>(b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
  }
  const uint64_t k = fields[1];
  if (fields[0] != d || k > max_k)
    return absl::InvalidArgumentError(absl::StrCat(
        "index set: ", k, " of ", fields[0], " coordinates, expected at most ",
        max_k, " of ", d));
  std::string whole(bytes);
  whole.append(2 * k, '\0');
  auto set = DecodeSparseDelta(whole, d, max_k);
  if (!set.ok()) return set.status();
  return std::move(set->indices);
}

}  // namespace shefl
