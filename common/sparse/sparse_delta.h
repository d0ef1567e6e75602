// A sparse model update: the (index, value) pairs top-k kept of one
// model's flat fp32 delta. This is what crosses the wire (common/sparse/codec.h
// encodes it) and what the aggregator folds (common/fed/aggregate.h).
// Thread-compatible: SparseDelta is a plain value.
#ifndef SHEFL_COMMON_SPARSE_SPARSE_DELTA_H_
#define SHEFL_COMMON_SPARSE_SPARSE_DELTA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shefl {

struct SparseDelta {
  uint64_t dim = 0;               // d: length of the dense flat vector
  std::vector<uint32_t> indices;  // ascending and unique, each < dim
  std::vector<float> values;      // values[i] belongs at indices[i]

  size_t nnz() const { return indices.size(); }
};

}  // namespace shefl

#endif  // SHEFL_COMMON_SPARSE_SPARSE_DELTA_H_
