// Whether members are stacked into one computation (StackedMembers,
// common/learn_stacked/stacked_members.h): by LocalTrainMany
// (common/learn_stacked/stacked_train.h) and by the ensemble's evaluation
// (StackedEval, common/learn_stacked/stacked_eval.h).
#ifndef SHEFL_COMMON_LEARN_STACKED_STACKED_PATH_H_
#define SHEFL_COMMON_LEARN_STACKED_STACKED_PATH_H_

namespace shefl {

// kAuto stacks where the device is CUDA and the model allows, and loops on
// a CPU, where stacking gained nothing (docs/DESIGN.md, "Ensemble-native
// training and the round on a GPU"); kOn and kOff force either path
// (tests, benches).
enum class StackedPath { kAuto, kOn, kOff };

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_STACKED_PATH_H_
