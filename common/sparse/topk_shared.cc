#include "common/sparse/topk_shared.h"

#include <numeric>
#include <utility>

namespace shefl {

bool TrivialTopK(const float* x, uint64_t d, uint64_t k, SparseDelta* out) {
  if (!AllFinite(x, d)) return false;
  SparseDelta result;
  result.dim = d;
  if (k >= d) {
    result.indices.resize(d);
    std::iota(result.indices.begin(), result.indices.end(), 0u);
    result.values.assign(x, x + d);
  }
  *out = std::move(result);
  return true;
}

}  // namespace shefl
