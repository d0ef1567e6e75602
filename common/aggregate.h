// Sparse-delta aggregation of one model in one round (DESIGN.md section 2).
//
// Updates are buffered as they arrive and folded in client-id order when
// the round closes, so the result is bit-identical whatever order they came
// in and however many daemons sent them.
//
// Rules, for the HPC updates H and LPC updates L of model m, with weights
// p_i (1, or the sample count when weight_by_samples):
//   uniform:        w += eta * sum_all p_i d_i / sum_all p_i
//   workload_aware: w += eta * (beta * D_H + (1 - beta) * D_L),
//                   D_G = sum_G p_i d_i / sum_G p_i; beta = hpc_share,
//                   1 when L is empty, 0 when H is empty
//   paper:          w += eta * (a_h sum_H d_i + a_l sum_L d_i) / |H u L|,
//                   a_h = (M C_h + C_l) / (2 M^2), a_l = (M C_h + C_l) / (2 M)
//                   (Eq. 2 of 000_9f7111865f5f561d.txt, read literally)
// A sparse delta counts as zero where it sent nothing.
#ifndef SHEFL_COMMON_AGGREGATE_H_
#define SHEFL_COMMON_AGGREGATE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/config.h"
#include "common/schedule.h"
#include "common/sparse_delta.h"

namespace shefl {

struct ReceivedUpdate {
  int64_t client_id = 0;
  Tier tier = Tier::kLpc;
  double num_samples = 1;
  SparseDelta delta;
};

// The cohort shape the `paper` rule's coefficients need.
struct CohortShape {
  int64_t num_models = 1;  // M
  int64_t num_hpc = 0;     // C_h
  int64_t num_lpc = 0;     // C_l
};

struct PaperCoefficients {
  double a_h, a_l;
};
PaperCoefficients PaperEq2(const CohortShape& shape);

class ModelAggregator {
 public:
  ModelAggregator(const AggregationConfig& config, const CohortShape& shape,
                  uint64_t dim);

  // Buffers one update. Refuses (and keeps nothing of) an update whose
  // dimension is wrong, whose indices are not ascending and in range, whose
  // values are not finite, or whose client already sent one.
  absl::Status Add(ReceivedUpdate update);

  // Folds the buffered updates into `weights` (size dim). With no updates
  // the weights are left as they are.
  absl::Status ApplyTo(std::vector<float>* weights);

  size_t num_updates() const { return updates_.size(); }

 private:
  std::vector<double> Coefficients() const;

  AggregationConfig config_;
  CohortShape shape_;
  uint64_t dim_;
  std::vector<ReceivedUpdate> updates_;
};

// Checks what every consumer of a SparseDelta relies on.
absl::Status ValidateSparseDelta(const SparseDelta& delta, uint64_t dim);

}  // namespace shefl

#endif  // SHEFL_COMMON_AGGREGATE_H_
