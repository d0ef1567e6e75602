// A tensor of the flat model seen as a grid of rows x cols entries from
// `offset`, row-major: entry (o, i) is coordinate offset + o * cols + i (a
// weight of shape [out, in...] has a row per output). Secure aggregation's
// vote (docs/DESIGN.md, "Secure aggregation: the vote") counts positions
// per row and per column of such grids: rows + cols words a grid.
// Thread-safe: plain values.
#ifndef SHEFL_COMMON_CORE_TENSOR_GRID_H_
#define SHEFL_COMMON_CORE_TENSOR_GRID_H_

#include <cstdint>
#include <vector>

namespace shefl {

struct TensorGrid {
  uint64_t offset = 0, rows = 0, cols = 0;
  uint64_t numel() const { return rows * cols; }
  bool operator==(const TensorGrid& o) const {
    return offset == o.offset && rows == o.rows && cols == o.cols;
  }
};

// The vote's words over `grids`: each grid's rows, then its columns.
inline uint64_t MarginalWords(const std::vector<TensorGrid>& grids) {
  uint64_t n = 0;
  for (const TensorGrid& g : grids) n += g.rows + g.cols;
  return n;
}

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_TENSOR_GRID_H_
