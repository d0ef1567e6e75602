#include "common/fed/oracle_support.h"

#include "common/sparse/radix_topk.h"

namespace shefl {

std::optional<OracleChoice> OracleSelect(const std::vector<float>& dense,
                                         uint64_t k,
                                         std::vector<float>* residual) {
  const uint64_t d = dense.size();
  std::vector<float> v = dense;
  if (residual->size() == d)
    for (uint64_t i = 0; i < d; ++i) v[i] += (*residual)[i];
  OracleChoice out;
  if (!RadixTopK(v.data(), d, k, &out.update)) return std::nullopt;
  double all = 0, kept = 0;
  for (float x : v) all += static_cast<double>(x) * x;
  for (float x : out.update.values) kept += static_cast<double>(x) * x;
  out.energy = all > 0 ? kept / all : 1.0;
  for (uint32_t i : out.update.indices) v[i] = 0;
  *residual = std::move(v);
  return out;
}

}  // namespace shefl
