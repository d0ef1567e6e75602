// The stacked path of learn's evaluation: a StackMembers
// (common/learn/member_stack.h) that stacks the members as StackedMembers
// (stacked_members.h), for a caller to hand to EvaluateEnsemble through
// EvalThreads::stack (common/learn/eval_batches.h). The coordinator hands
// in StackedEval() (server/coordinator_builder.cc); learn itself never
// names it. Stateless; the function it gives is thread-safe.
#ifndef SHEFL_COMMON_LEARN_STACKED_STACKED_EVAL_H_
#define SHEFL_COMMON_LEARN_STACKED_STACKED_EVAL_H_

#include "common/learn/member_stack.h"
#include "common/learn_stacked/stacked_path.h"

namespace shefl {

// Stacks where `mode` asks for it (kAuto: on CUDA; kOn: on any device, for
// tests; kOff: never), there are two members or more and StackedMembers
// knows the model; else gives null, and the members run one after another.
StackMembers StackedEval(StackedPath mode = StackedPath::kAuto);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_STACKED_STACKED_EVAL_H_
