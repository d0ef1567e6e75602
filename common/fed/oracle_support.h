// The ceiling of any public support (secure.support: oracle, clear only;
// docs/DESIGN.md, "Secure aggregation: the oracle"): the parties send their
// clients' clipped, weighted updates on every coordinate in the clear, and
// the coordinator keeps, of the round's update plus its own residual, the
// K coordinates of largest magnitude (the "true top-k" that Sketched-SGD
// and FetchSGD compare against); the rest waits in the residual for the
// next round, as error feedback. A support chosen from public data can at
// best pick those K coordinates; how much of the update's energy they hold
// says how much any public support could recover.
// Thread-safe: a free function.
#ifndef SHEFL_COMMON_FED_ORACLE_SUPPORT_H_
#define SHEFL_COMMON_FED_ORACLE_SUPPORT_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "common/sparse/sparse_delta.h"

namespace shefl {

struct OracleChoice {
  SparseDelta update;  // v on C: the K largest |v|, ascending
  double energy = 1;   // ||v on C||^2 / ||v||^2 (1 when v is 0)
};

// v = `dense` (d floats) + `residual` (d floats; empty means zeros): the
// top min(k, d) of |v|, ties to the lower coordinate. The residual becomes
// v off C (zero on C). nullopt, the residual untouched, when v holds a NaN
// or an infinity.
std::optional<OracleChoice> OracleSelect(const std::vector<float>& dense,
                                         uint64_t k,
                                         std::vector<float>* residual);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_ORACLE_SUPPORT_H_
