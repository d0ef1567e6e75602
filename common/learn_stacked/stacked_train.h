// Training an HPC's M members on one shard: LocalTrainMany, which loops
// over LocalTrain (common/learn/train.h) or takes the stacked path,
// LocalTrainStacked, on StackedMembers
// (common/learn_stacked/stacked_members.h). Stateless; thread-safe for
// distinct models.
#ifndef SHEFL_COMMON_LEARN_STACKED_STACKED_TRAIN_H_
#define SHEFL_COMMON_LEARN_STACKED_STACKED_TRAIN_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/dataset.h"
#include "common/learn/models.h"
#include "common/learn/train.h"
#include "common/learn_stacked/stacked_path.h"

namespace shefl {

// Trains several members on one shard with the same batch order (all use
// p's seed tags, p.member included), as an HPC does with its M models. The
// result equals LocalTrain on each member with `p`: exactly on the loop
// path, up to float rounding on the stacked one (`stacked` says which;
// LocalTrainStacked below). On CPU kAuto loops (a fused pass measured
// 0.93-0.95x, docs/DESIGN.md). `prox_references` is empty or one per
// member. kOn with a model the stacked path does not know ->
// Unimplemented.
absl::StatusOr<std::vector<TrainStats>> LocalTrainMany(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p, StackedPath stacked = StackedPath::kAuto,
    const std::vector<at::Tensor>& prox_references = {});

// LocalTrainMany on the stacked path: the same contract (the same batches
// from p's seed tags, LocalTrain's optimiser, FedProx per member, the
// trailing-batch rule, per-member TrainStats with the same loss
// definitions; each member's `seconds` is the whole run's over M), one
// computation per step for all members. The members are moved to
// p.device and receive the trained state; on an error they keep their
// weights. Unsupported architecture -> Unimplemented; a non-finite loss
// -> Internal "member k: local training diverged ...".
absl::StatusOr<std::vector<TrainStats>> LocalTrainStacked(
    const std::vector<std::shared_ptr<Net>>& models, const Dataset& data,
    const std::vector<int64_t>& indices, const TrainConfig& cfg,
    const LocalTrainParams& p,
    const std::vector<at::Tensor>& prox_references = {});

// FedProx on a stack: mu/2 * sum over the stacked members of
// ||w_m - ref_m||^2, the references stacked like the parameters
// (StackedMembers::StackReferences). Both stacked loops add it, this
// file's and the cohort's (cohort_stack.cc).
at::Tensor StackedProxLoss(const std::vector<at::Tensor>& params,
                           const std::vector<at::Tensor>& refs, double mu);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_STACKED_TRAIN_H_
