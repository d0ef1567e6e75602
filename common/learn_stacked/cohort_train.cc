#include "common/learn_stacked/cohort_train.h"

#include <ATen/Functions.h>

#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/learn/train_internal.h"
#include "common/learn_stacked/cohort_lanes.h"
#include "common/learn_stacked/stacked_members.h"

namespace shefl {

absl::StatusOr<Stacking> ParseStacking(const std::string& s) {
  if (s == "auto") return Stacking::kAuto;
  if (s == "on") return Stacking::kOn;
  if (s == "off") return Stacking::kOff;
  return absl::InvalidArgumentError(
      absl::StrCat("train.stacking must be auto, on or off, not '", s, "'"));
}

absl::Status CohortSupports(const Net& model, const TrainConfig& cfg) {
  if (cfg.optimizer != "sgd") {
    return absl::UnimplementedError(absl::StrCat(
        "the cohort stack steps SGD only, not train.optimizer '",
        cfg.optimizer, "'"));
  }
  SHEFL_RETURN_IF_ERROR(StackedMembers::Supports(model));
  if (!model.buffers().empty()) {
    return absl::UnimplementedError(
        "the model has BatchNorm: a short batch is padded in the cohort "
        "stack, and the padding would enter its batch statistics");
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ResolveStacking(Stacking mode, const Net& model,
                                     const TrainConfig& cfg,
                                     c10::Device device) {
  if (mode == Stacking::kOff) return false;
  const absl::Status st = CohortSupports(model, cfg);
  if (mode == Stacking::kAuto) return device.is_cuda() && st.ok();
  if (!st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("train.stacking: on, but ", st.message()));
  }
  return true;
}

namespace {

using cohort_internal::Lane;
using Results = std::vector<std::optional<absl::StatusOr<TrainStats>>>;

// The union of the lanes' shards on the device, and each lane's rows in it.
cohort_internal::CohortShard GatherUnion(const Dataset& data,
                                         std::vector<Lane>& lanes,
                                         const std::vector<CohortTask>& tasks,
                                         c10::Device dev) {
  std::vector<int64_t> rows;
  for (Lane& lane : lanes) {
    const std::vector<int64_t>& ids = tasks[lane.task].indices;
    lane.ids.clear();
    for (size_t i = 0; i < ids.size(); ++i)
      lane.ids.push_back(static_cast<int64_t>(rows.size() + i));
    rows.insert(rows.end(), ids.begin(), ids.end());
  }
  const at::Tensor idx = at::tensor(rows, at::kLong).to(data.x.device());
  return {data.x.index_select(0, idx).to(dev),
          data.y.index_select(0, idx).to(dev).to(at::kLong)};
}

// The lanes of the tasks that can stack; the others' results (bad input)
// are set, or they are left to train one after another.
std::vector<Lane> MakeLanes(std::vector<CohortTask>& tasks, const Dataset& data,
                            const TrainConfig& cfg, c10::Device dev,
                            bool supported, Results& results) {
  std::vector<Lane> lanes;
  for (size_t t = 0; t < tasks.size(); ++t) {
    LocalTrainParams p = tasks[t].params;
    p.device = dev;
    if (!tasks[t].net) {
      results[t] = absl::InvalidArgumentError(
          absl::StrCat("cohort task ", t, " has no network"));
      continue;
    }
    if (auto st = train_internal::CheckInputs(data, tasks[t].indices, cfg, p);
        !st.ok()) {
      results[t] = st;
      continue;
    }
    // FedProx stacks only where every task has its reference.
    if (!supported || (cfg.prox_mu > 0 && !p.prox_reference.defined()))
      continue;
    Lane lane;
    lane.task = t;
    lane.p = p;
    lane.rng = train_internal::BatchOrderRng(p);
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

// LocalTrain for every task without a result yet.
void TrainTheRest(std::vector<CohortTask>& tasks, const Dataset& data,
                  const TrainConfig& cfg, c10::Device dev, Results& results) {
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (results[t]) continue;
    LocalTrainParams p = tasks[t].params;
    p.device = dev;
    results[t] = LocalTrain(*tasks[t].net, data, tasks[t].indices, cfg, p);
  }
}

}  // namespace

std::vector<absl::StatusOr<TrainStats>> CohortTrain(
    std::vector<CohortTask>& tasks, const Dataset& data,
    const TrainConfig& cfg, c10::Device device, bool cuda_graphs) {
  const auto start = std::chrono::steady_clock::now();
  Results results(tasks.size());
  const bool supported = !tasks.empty() && tasks[0].net &&
                         CohortSupports(*tasks[0].net, cfg).ok();
  std::vector<Lane> lanes =
      MakeLanes(tasks, data, cfg, device, supported, results);
  if (!lanes.empty()) {
    absl::Status st;
    try {
      cohort_internal::CohortShard shard =
          GatherUnion(data, lanes, tasks, device);
      for (Lane& lane : lanes) {
        train_internal::Shard s{shard.x, shard.y, lane.ids};
        lane.batches = train_internal::PassBatches(*tasks[lane.task].net, s,
                                                   cfg.batch_size);
      }
      st = cohort_internal::RunStack(std::move(lanes), shard, tasks, cfg,
                                     device, cuda_graphs, results);
    } catch (const std::exception& e) {
      st = absl::InternalError(absl::StrCat("cohort stack: ", e.what()));
    }
    if (!st.ok())
      LogLine("cohort", absl::StrCat(st.message(),
                                     "; the tasks left train one by one"));
  }
  TrainTheRest(tasks, data, cfg, device, results);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count() /
      static_cast<double>(std::max<size_t>(1, tasks.size()));
  std::vector<absl::StatusOr<TrainStats>> out;
  for (auto& r : results) {
    if (r->ok()) (*r)->seconds = seconds;
    out.push_back(*std::move(r));
  }
  return out;
}

}  // namespace shefl
