// Counting ATen operator calls: a figure that says how much host-side work
// a training step launches (each op is a dispatch and, on a GPU, at least
// one kernel launch) and that holds on a CPU, where timings of GPU work
// mean nothing (bench/op_count_bench, tests/op_count_test).
//
// OpCounter registers a global RecordFunction callback for the FUNCTION
// scope (what the dispatcher records for every observed op) while it is
// alive. `all` counts every op entered; `top_level` only those entered
// while no other op runs on that thread: what the caller or an autograd
// backward node asked for, not the ops a composite op calls inside.
// Redispatches of one op through its dispatch keys (autograd, then the
// kernel) count once. Records in that scope that name no operator (the
// autograd engine's "evaluate_function: ..." around each node) are not
// ops: neither counted nor nesting, so a node's ops are top level.
//
// Thread-safe: the callback runs on every thread (the autograd engine may
// run backward on its own threads), so the tallies are atomics and the
// nesting depth is thread-local. Several counters may live at once; each
// reports only what happened in its own lifetime.
#ifndef SHEFL_COMMON_LEARN_OP_COUNTER_H_
#define SHEFL_COMMON_LEARN_OP_COUNTER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace shefl {

struct OpCounts {
  int64_t top_level = 0;
  int64_t all = 0;
};

class OpCounter {
 public:
  // by_name: also tally ops by name (a lock per op: for reports, not for
  // timing). RecordFunction is switched on for this thread while
  // the counter lives (it is thread-local and off under some guards);
  // threads started from here (autograd's) inherit that.
  explicit OpCounter(bool by_name = false);
  ~OpCounter();  // Stop()
  OpCounter(const OpCounter&) = delete;
  OpCounter& operator=(const OpCounter&) = delete;

  // Ends counting; counts() stays as it was. Idempotent. Call it on the
  // thread that made the counter (it restores that thread's switch).
  void Stop();
  OpCounts counts() const;
  // Ops by name (top-level ones, or all), most frequent first; empty
  // unless by_name.
  using Tally = std::map<std::string, int64_t>;
  std::vector<std::pair<std::string, int64_t>> ByName(bool top_level) const;

 private:
  bool running_ = true;
  bool by_name_ = false;
  bool was_enabled_ = true;
  OpCounts start_, end_;
  Tally top_start_, top_end_, all_start_, all_end_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_LEARN_OP_COUNTER_H_
