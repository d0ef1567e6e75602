// Training an HPC's M members as one computation: the stacked path of
// LocalTrainMany (common/learn/train.h), on StackedMembers
// (common/learn/stacked_members.h). Stateless; thread-safe for distinct
// models.
#ifndef SHEFL_COMMON_LEARN_STACKED_TRAIN_H_
#define SHEFL_COMMON_LEARN_STACKED_TRAIN_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/dataset.h"
#include "common/learn/models.h"
#include "common/learn/train.h"

namespace shefl {

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

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_TRAIN_H_
