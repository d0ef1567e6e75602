// Cohort-stacked training: every task of a round on one daemon (each
// client it hosts times each model assigned to it, one architecture) as
// one stacked computation (docs/DESIGN.md, "Ensemble-native training and
// the round on a GPU"). Unlike LocalTrainMany's members, which share one
// shard and one batch order, each task here has its own shard, its own
// batch order (its own seed tags), its own learning rate and its own
// number of steps. The stack shrinks as tasks finish: a finished task is
// written back into its network and leaves the stack, so every step runs
// only the tasks still training. A lane whose batch is short (the last of
// a pass) is padded with one of its own samples that its loss leaves out.
//
// The result equals LocalTrain on each task up to float rounding (grouped
// and batched kernels sum in another order; a padded lane's mean is a
// masked sum over its count): cohort_train_test holds it to 1e-4 of the
// weights for cnn and mlp. Models with BatchNorm are not stacked here: a
// padded sample would enter the batch statistics (CohortSupports says so).
// Stateless; thread-safe for distinct tasks.
#ifndef SHEFL_COMMON_LEARN_STACKED_COHORT_TRAIN_H_
#define SHEFL_COMMON_LEARN_STACKED_COHORT_TRAIN_H_

#include <c10/core/Device.h>

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/data/dataset.h"
#include "common/learn/models.h"
#include "common/learn/train.h"

namespace shefl {

// train.stacking: whether a daemon trains a round's tasks as one stack.
enum class Stacking { kAuto, kOn, kOff };
absl::StatusOr<Stacking> ParseStacking(const std::string& s);

// OK where the cohort path can train `model` with `cfg` (an architecture
// StackedMembers knows, no BatchNorm, SGD); Unimplemented naming what
// stands in the way otherwise.
absl::Status CohortSupports(const Net& model, const TrainConfig& cfg);

// Whether a daemon on `device` stacks its round: kOff never; kAuto where
// the device is CUDA and the model is supported; kOn wherever supported,
// else InvalidArgument naming train.stacking and the reason.
absl::StatusOr<bool> ResolveStacking(Stacking mode, const Net& model,
                                     const TrainConfig& cfg,
                                     c10::Device device);

// One task of the cohort.
struct CohortTask {
  // The task's start weights; receives its trained weights (moved to the
  // cohort's device). A task that fails keeps whatever it held.
  std::shared_ptr<Net> net;
  std::vector<int64_t> indices;  // the client's shard in the data set
  // lr, epochs or steps, seed tags, prox_reference (LocalTrain's meaning);
  // device is ignored.
  LocalTrainParams params;
};

// Trains every task in one stack on `device`; cfg (optimizer, momentum,
// weight decay, batch size, prox_mu, lr schedule, precision) is shared.
// One result per task, in order: its TrainStats (`seconds` is the whole
// cohort's over the number of tasks), or its own error: bad indices or
// settings -> InvalidArgument; a non-finite loss -> Internal "local
// training diverged ..." as LocalTrain says it. One task's error never
// costs another its result; should the stacked computation itself fail
// (a torch error), the tasks still unfinished train one after another.
// An unsupported model (CohortSupports) trains every task one after
// another.
//
// On CUDA with a LibTorch that has it (and `cuda_graphs`), a run of like
// steps (every lane's batch full, one lr, the stack unchanged, at least 8
// steps) is recorded as a CUDA graph after two eager steps and replayed:
// one launch a step instead of hundreds. The learning rate is fixed in
// the recording: a graph lives within one run of like steps of one round,
// where it is one value, and a new lr ends the run. A refused recording
// steps eagerly from there on.
std::vector<absl::StatusOr<TrainStats>> CohortTrain(
    std::vector<CohortTask>& tasks, const Dataset& data,
    const TrainConfig& cfg, c10::Device device, bool cuda_graphs = true);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_COHORT_TRAIN_H_
