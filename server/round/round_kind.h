// The kind of round a method runs, behind one interface so that the
// Coordinator names no method: who trains what in round t, what the
// closed round's updates become, how its record evaluates them, and what
// the summary adds. Two kinds exist: the iterative round (aggregate the
// updates into the M globals, robust rules, server optimiser;
// iterative_round.h) and the one-shot FENS round (keep every client's
// model as a member and fit an aggregator over them; fens_round.h). A
// method picks its kind by its round shape (common/fed/methods/registry.h);
// a new kind is one file and a line in MakeRoundKind.
// Not thread-safe: the round loop calls Plan and Close; the closure a
// ClosedRound carries runs on the record's thread, on its own copies.
#ifndef SHEFL_SERVER_ROUND_ROUND_KIND_H_
#define SHEFL_SERVER_ROUND_ROUND_KIND_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "common/core/config.h"
#include "common/fed/aggregate.h"
#include "common/fed/schedule.h"
#include "common/fed/server_optimizer.h"
#include "common/learn/evaluate.h"
#include "server/round/capacity_plan.h"
#include "server/round/evaluator.h"
#include "server/run/model_store.h"
#include "server/run/run_results.h"
#include "server/shared/coordinator_state.h"

namespace shefl {

// What a closed round hands to its record, which runs beside the next
// round's training.
struct ClosedRound {
  std::vector<ModelSnapshot> models;  // evaluated and checkpointed
  std::vector<uint64_t> versions;
  nlohmann::json fields = nlohmann::json::object();  // for the round's line
  // On the record's thread: the figures of `models`, adding what the kind
  // reports to `line`.
  std::function<absl::StatusOr<EvalResult>(nlohmann::json* line)> evaluate;
  // State saved beside the round's checkpoint (null when none).
  std::shared_ptr<const ServerOptimizer> optimizer;
};

// What a kind works with once the run's state exists; all outlive it.
struct RoundContext {
  CoordinatorState* state = nullptr;
  Evaluator* evaluator = nullptr;
  Scheduler* scheduler = nullptr;
  CapacityPlan* capacity = nullptr;
  RunResults* results = nullptr;
  int64_t first_round = 0;  // t of the first round this process runs
};

class RoundKind {
 public:
  virtual ~RoundKind() = default;

  // Before the run's state exists: OK when a checkpoint of `num_models`
  // models can continue under this config.
  virtual absl::Status CheckCheckpoint(int64_t num_models) const = 0;
  // Once the run's state exists (and, on a resume, its state saved beside
  // the checkpoint of round first_round can be read).
  virtual absl::Status Bind(const RoundContext& context) = 0;

  // Round t's tasks (t from 0) among the clients `available` accepts (all
  // when null).
  virtual RoundPlan Plan(int64_t t, const Availability& available) = 0;
  // The closed round's updates, folded in client order.
  virtual absl::StatusOr<ClosedRound> Close(
      std::vector<ModelAggregator>& aggregators) = 0;

  // summary.json's model_sha256 (one digest per model of the run's
  // result) and what else the kind adds; `last_line`: rounds.jsonl's last.
  virtual void AddSummary(const nlohmann::json& last_line,
                          nlohmann::json* summary) const = 0;
};

// The kind config.method's round shape names; FENS loads its data here.
absl::StatusOr<std::unique_ptr<RoundKind>> MakeRoundKind(
    const ExperimentConfig& config);

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_ROUND_KIND_H_
