// Server optimisation of each member's aggregated step (docs/DESIGN.md,
// "Aggregation"). The aggregation rule
// gives Delta = eta_g * D for member m; then
//   none:     w += Delta
//   momentum: v = mu v + Delta; w += v                (FedAvgM, Hsu 2019)
//   adam:     g = Delta / eta_g; m1 = b1 m1 + (1 - b1) g;
//             v = b2 v + (1 - b2) g^2; w += eta_g m1 / (sqrt(v) + tau)
//                                                    (FedAdam, Reddi 2021)
// A member that received no update this round keeps its weights and its
// state. Every operation is element-wise in float, in index order, so the
// result is bit-identical however the updates were packed. The state goes
// with the checkpoint so a resumed run reaches the same models.
// Thread-compatible: one round thread steps it; Save reads a copy.
#ifndef SHEFL_COMMON_FED_SERVER_OPTIMIZER_H_
#define SHEFL_COMMON_FED_SERVER_OPTIMIZER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/core/config.h"

namespace shefl {

class ServerOptimizer {
 public:
  // InvalidArgument for an unknown aggregation.server_optimizer.
  static absl::StatusOr<ServerOptimizer> Create(const AggregationConfig& cfg,
                                                int64_t num_models,
                                                uint64_t dim);

  // False for "none": the caller applies Delta itself (the plain path).
  bool active() const { return kind_ != Kind::kNone; }

  // Moves *weights of member `model` by its aggregated step `delta`.
  void Step(int64_t model, const std::vector<float>& delta,
            std::vector<float>* weights);

  // The state after round `round`, atomically (write, fsync, rename);
  // Load refuses a file of another round, optimiser or shape.
  absl::Status Save(const std::string& path, int64_t round) const;
  absl::Status Load(const std::string& path, int64_t round);

 private:
  enum class Kind { kNone, kMomentum, kAdam };
  ServerOptimizer() = default;

  Kind kind_ = Kind::kNone;
  AggregationConfig cfg_;
  uint64_t dim_ = 0;
  // Per member: momentum's v, or adam's first and second moments.
  std::vector<std::vector<float>> first_, second_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_SERVER_OPTIMIZER_H_
