// Sparse-delta aggregation of one model in one round (docs/DESIGN.md,
// "Aggregation").
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
//                   (Eq. 2 of the long SHEFL paper, 000, read literally).
//                   C_h, C_l are the round's planned counts, so a model that
//                   misses an update gets another step: in the paper's
//                   setting (M = C_h = C_l = 5) a model without its LPC
//                   update moves by 0.6 D_H, one with two LPC updates by
//                   (3 D_H + 6 D_L) / 7.
//   paper_per_model: the same form with the short SHEFL paper's (001)
//                   per-submodel coefficients from the counts received for
//                   m, H = |H| and L = |L|:
//                   w += eta * (a_h sum_H d_i + a_l sum_L d_i) / (H + L),
//                   a_h = (H + L) / (2 H), a_l = (H + L) / (2 L),
//                   so each group's sum "accounts for half of the total
//                   updates" (001's text; its printed a_h has a factor L/M
//                   more, which breaks that) and the step is
//                   (D_H + D_L) / 2 whatever arrived; with one group empty
//                   the other has all of it (a_h = 1 or a_l = 1), as
//                   workload_aware's beta does. In the paper's setting it
//                   equals `paper` (H = 5 = M, L = 1).
//                   With capacity levels (an HPC trains m_i < M models,
//                   CohortShape::hpc_subsets) `paper` uses these
//                   received-count coefficients too.
// paper and paper_per_model count every update once (weight_by_samples and
// hpc_share do not apply). A sparse delta counts as zero where it sent
// nothing.
// Two reductions (aggregation.reduction). client_order buffers the updates
// and folds them as described under ApplyTo. fixed_point keeps none: Add
// folds p_i d_i into its group's exact fixed-point sum
// (common/fed/fixed_point_sum.h) at once, and ApplyTo adds each group's
// sum times the group's coefficient; every rule above is of that form.
// Both are bit-identical whatever the arrival order; they can differ from
// each other in a weight's last bit (the double sum in client_order rounds
// at every term, fixed_point only at 2^-61 and once at the end).
// ModelAggregator is thread-compatible: the round's state
// (server/state/round_state.h) serialises Add under its lock, and ApplyTo runs once
// the round is closed.
#ifndef SHEFL_COMMON_FED_AGGREGATE_H_
#define SHEFL_COMMON_FED_AGGREGATE_H_

#include <array>
#include <cstdint>
#include <map>
#include <unordered_set>
#include <vector>

#include "absl/status/status.h"
#include "common/core/config.h"
#include "common/fed/fixed_point_sum.h"
#include "common/fed/schedule.h"
#include "common/sparse/sparse_delta.h"

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
  // Capacity levels: some HPC of the round trains fewer than M models, so
  // Eq. 2's planned counts (every HPC updates every model) do not hold;
  // `paper` then takes paper_per_model's coefficients from the counts
  // received for the model.
  bool hpc_subsets = false;
};

struct PaperCoefficients {
  double a_h, a_l;
};
PaperCoefficients PaperEq2(const CohortShape& shape);
// paper_per_model's a_h and a_l for H HPC and L LPC updates received.
PaperCoefficients PaperPerModel(int64_t hpc_received, int64_t lpc_received);

class ModelAggregator {
 public:
  ModelAggregator(const AggregationConfig& config, const CohortShape& shape,
                  uint64_t dim);

  // Buffers one update (fixed_point: folds it in). Refuses (and keeps
  // nothing of) an update whose dimension is wrong, whose indices are not
  // ascending and in range, whose values are not finite (fixed_point: or
  // beyond the sum's range), or whose client already sent one.
  absl::Status Add(ReceivedUpdate update);

  // Folds the buffered updates into `weights` (size dim). With no updates
  // the weights are left as they are. Every weight gets its contributions
  // in client-id order in one double accumulator and one rounding to float
  // (bit-identical whatever the arrival order); the accumulator covers one
  // L2-sized tile of the weights at a time, so the pass streams the updates
  // once rather than scattering into a dense double vector of size dim.
  // A model of 2^21 weights or more is split in two ranges folded on two
  // threads (where there are two cores); the result is the same.
  absl::Status ApplyTo(std::vector<float>* weights);

  size_t num_updates() const {
    return streamed_ ? seen_.size() : updates_.size();
  }
  bool streamed() const { return streamed_; }
  // fixed_point: each added update's L2 norm (the robust report's).
  const std::vector<double>& streamed_norms() const { return norms_; }
  // The buffered updates, in arrival order (FENS keeps each client's model
  // instead of folding them: server/round/fens_ensemble.h); none under
  // fixed_point.
  const std::vector<ReceivedUpdate>& updates() const { return updates_; }
  // The robust bounds (common/fed/robust.h) scale, trim or remove buffered
  // updates before ApplyTo.
  std::vector<ReceivedUpdate>* mutable_updates() { return &updates_; }
  // client_order: each buffered update's coefficient in the rule (eta
  // included), by client id: sum_i coef_i d_i is the rule's step. Secure
  // aggregation's public weights are these for the planned updates.
  std::map<int64_t, double> CoefficientsByClient() const;

 private:
  // Each group's coefficient (eta included) for `mass` (group 0: HPC or
  // everyone, 1: LPC; the weights, or the counts where weights do not
  // apply) over `n` updates; an update's own is this times its weight.
  std::array<double, 2> GroupScales(const double mass[2], size_t n) const;
  int Group(Tier tier) const;
  double Weight(const ReceivedUpdate& u) const;  // p_i, or 1
  std::vector<double> Coefficients() const;
  absl::Status ApplyStreamed(std::vector<float>* weights) const;

  AggregationConfig config_;
  CohortShape shape_;
  uint64_t dim_;
  bool streamed_;
  bool by_samples_;
  std::vector<ReceivedUpdate> updates_;
  std::unordered_set<int64_t> seen_;  // client ids added
  // fixed_point: each group's sum of p_i d_i and its mass.
  std::vector<FixedPointSum> sums_;
  double mass_[2] = {0, 0};
  std::vector<double> norms_;
};

// Checks what every consumer of a SparseDelta relies on.
absl::Status ValidateSparseDelta(const SparseDelta& delta, uint64_t dim);

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_AGGREGATE_H_
