// The coordinator's side of capacity levels and HASA: what each client may
// train this round, from what daemons declared (capacity, label counts)
// and the config; and the round line's fields that show it.
//
// shefl: an HPC's capacity is its daemon's declaration (--capacity) when
// there is one, else clients.hpc_capacity (Scheduler::Plan).
// hasa: the allocation of common/fed/hasa.h over every client whose label
// histogram has arrived, recomputed whenever more have arrived than the
// last allocation used (normally once: the run starts with every client
// connected, and a client's report precedes its first task). A client with
// no histogram yet trains B * M models a round.
// Thread-compatible: the round loop alone calls it.
#ifndef SHEFL_SERVER_ROUND_CAPACITY_PLAN_H_
#define SHEFL_SERVER_ROUND_CAPACITY_PLAN_H_

#include <cstdint>
#include <map>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/core/config.h"
#include "common/fed/hasa.h"
#include "common/fed/schedule.h"
#include "server/run/coordinator_metrics.h"
#include "server/state/client_reports.h"

namespace shefl {

class CapacityPlan {
 public:
  // Both must outlive the plan. Used from the round loop only.
  CapacityPlan(const ExperimentConfig& config, const ClientReports& reports);

  // The capacities for the next round's Plan (recomputing HASA's first).
  CapacityOf ForRound();

  // rounds.jsonl: "models_by_client" (how many models each client of the
  // round was given) when capacities are in play (hpc_capacity set, a
  // declared capacity, or hasa); for hasa also "hasa": {allocation, budget,
  // budget_realised, clients_scored, label_count_bytes (received so far,
  // all clients), and, in the round that (re)computed it, "clients":
  // {id: {score, normalised, cap, width, capacity}}}.
  // The same figures go to `metrics` (CoordinatorMetrics::SetModelsPerClient,
  // SetHasa) when in play.
  void AddFields(const RoundPlan& plan, nlohmann::json* line,
                 CoordinatorMetrics& metrics);

 private:
  void Reallocate();

  const ExperimentConfig& config_;
  const ClientReports& reports_;
  size_t scored_ = 0;                 // histograms the allocation used
  bool fresh_ = false;                // recomputed since the last line
  std::vector<int64_t> ids_;          // clients of the allocation
  HasaAllocation allocation_;
  std::map<int64_t, double> capacity_;  // hasa: r_i * M
};

}  // namespace shefl

#endif  // SHEFL_SERVER_ROUND_CAPACITY_PLAN_H_
