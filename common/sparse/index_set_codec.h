// A set of coordinates on the wire, in the sparse codec's index section
// (common/sparse/codec.h): the encoding of a SparseDelta of fp16 zeros at
// those coordinates, less its value bytes. So a secure round's support C_t
// costs what the indices of a top-k upload cost (about 5.9 KB for 5,821 of
// 582,026 coordinates), and the decoder's checks (ascending, unique, in
// range, canonical) hold for it as for every upload.
// Thread-safe: free functions without state.
#ifndef SHEFL_COMMON_SPARSE_INDEX_SET_CODEC_H_
#define SHEFL_COMMON_SPARSE_INDEX_SET_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace shefl {

// `indices` ascending, unique and below d.
absl::StatusOr<std::string> EncodeIndexSet(uint64_t d,
                                           const std::vector<uint32_t>& indices);

// At most `max_k` indices below d; InvalidArgument for anything else.
absl::StatusOr<std::vector<uint32_t>> DecodeIndexSet(std::string_view bytes,
                                                     uint64_t d,
                                                     uint64_t max_k);

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_INDEX_SET_CODEC_H_
