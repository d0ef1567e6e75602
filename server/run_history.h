// What the rounds a run recorded before a resume said: the best accuracy,
// the round that first reached the threshold, the wall time, the bytes,
// and the last evaluation (the summary's "final" figures when the resumed
// process evaluates nothing before it ends). Read from rounds.jsonl
// (server/run/rounds_log.h). A plain value: thread-compatible.
#ifndef SHEFL_SERVER_RUN_HISTORY_H_
#define SHEFL_SERVER_RUN_HISTORY_H_

#include <cstdint>
#include <string>

#include "common/learn/evaluate.h"
#include "common/net/accounting.h"

namespace shefl {

struct RunHistory {
  double best_accuracy = 0;
  int64_t rounds_to_threshold = -1;  // none reached it
  double wall_seconds = 0;
  ByteCounts bytes;  // the clients' and the daemons' counts of every round
  bool evaluated = false;
  int64_t last_eval_round = 0;  // the round last_eval is of; 0: none
  EvalResult last_eval;  // accuracy, loss and members' accuracy only
};

// The history of the run in `dir`; empty when it has no rounds.jsonl.
RunHistory ReadRunHistory(const std::string& dir, double threshold);

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_HISTORY_H_
