// Evaluation batches shared among CPU threads, consumed in batch order.
//
// The coordinator evaluates round t's models beside round t+1's training on
// the same cores (scripts/run.sh runs both on one machine). There, more
// evaluation threads than one only slow the training (measured on 2 cores:
// docs/PERFORMANCE.md section 9); but once the coordinator waits for the
// evaluation (round t+1 closed early, or the last round), the daemons are
// idle and one thread leaves cores unused. So the first worker starts at
// once and the others join when `all_in` is raised. Each batch is computed
// whole on one thread, and the results are consumed in batch order, so the
// figures are those of a single thread bit for bit.
#ifndef SHEFL_COMMON_LEARN_EVAL_BATCHES_H_
#define SHEFL_COMMON_LEARN_EVAL_BATCHES_H_

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/learn/member_stack.h"

namespace shefl {

// How an evaluation spreads its batches (CPU only; other devices use one).
struct EvalThreads {
  int threads = 1;  // workers; each uses the process's intra-op threads
  int nice = 0;     // added to each worker's nice value (>= 0; 0: as is)
  // Null: every worker starts at once. Else workers after the first wait
  // until it is true (or the batches are done).
  const std::atomic<bool>* all_in = nullptr;
  // The M members as one stacked forward where this gives a stack (one
  // worker then): the stacked room's StackedEval
  // (common/learn_stacked/stacked_eval.h) says where; null, one member
  // after another (member_stack.h).
  StackMembers stack;
};

// Computes batches 0..n-1 with `compute` on `par.threads` workers (on the
// calling thread when that is 1 or n < 2; the calling thread's grad mode
// and autocast carry over), then hands each result to `consume` in batch
// order on the calling thread. A c10::Error or other exception thrown by
// `compute` is rethrown here, after every worker has stopped.
void ForBatchesInOrder(
    int64_t n, const EvalThreads& par,
    const std::function<std::vector<at::Tensor>(int64_t)>& compute,
    const std::function<void(std::vector<at::Tensor>&)>& consume);

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_EVAL_BATCHES_H_
