// An exact, order-independent sum of weighted sparse deltas: one 128-bit
// fixed-point integer per weight (aggregation.reduction: fixed_point).
//
// Each term w * v (w a client's weight, v a delta value, their product
// rounded once to double) is rounded to a multiple of 2^-60 and added as
// an integer. Integer addition is associative, so the sum is the same bits
// whatever order the terms arrive in and however the clients were packed
// into daemons, and no update needs to be kept once it is added: memory is
// 16 bytes a weight, whatever the number of updates.
//
// Range, checked before anything is added: every term is at most 2^40
// (about 1.1e12) in magnitude and a sum takes at most 2^26 terms per
// weight, so a sum stays below 2^66 < 2^67, the accumulator's range: it
// cannot overflow. Resolution: a term is off by at most 2^-61 (4.3e-19),
// far below a float weight's last bit at any magnitude a model uses.
// Thread-compatible.
#ifndef SHEFL_COMMON_FED_FIXED_POINT_SUM_H_
#define SHEFL_COMMON_FED_FIXED_POINT_SUM_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/sparse/sparse_delta.h"

namespace shefl {

class FixedPointSum {
 public:
  static constexpr int kFractionBits = 60;
  static constexpr double kMaxTerm = 1099511627776.0;  // 2^40
  static constexpr int64_t kMaxTerms = int64_t{1} << 26;

  explicit FixedPointSum(uint64_t dim) : dim_(dim) {}

  // OUT_OF_RANGE naming the first value whose weighted term exceeds
  // kMaxTerm, or when the sum already holds kMaxTerms deltas. Add checks
  // it too; callers that must refuse before touching anything call it
  // first.
  absl::Status Check(const SparseDelta& delta, double weight) const;
  // Adds weight * delta (its dimension and indices already validated).
  // Nothing is added on error.
  absl::Status Add(const SparseDelta& delta, double weight);

  // The sum at `index`, rounded once to double.
  double Get(uint64_t index) const;
  // Whether any delta was added (the accumulator is allocated then).
  bool empty() const { return terms_ == 0; }
  int64_t terms() const { return terms_; }

 private:
  uint64_t dim_;
  int64_t terms_ = 0;
  std::vector<__int128> acc_;  // allocated at the first Add
};

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_FIXED_POINT_SUM_H_
