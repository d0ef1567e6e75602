// LocalTrainer::TrainCohort: a round's tasks on this daemon as one stack
// (common/learn_stacked/cohort_train.h), each packaged as Train packages its
// own.
#include <ATen/Functions.h>

#include <chrono>

#include "absl/strings/str_cat.h"
#include "client/local_trainer.h"
#include "common/core/status_macros.h"
#include "common/learn/flat_state.h"
#include "common/learn_stacked/cohort_train.h"

namespace shefl {

absl::StatusOr<std::shared_ptr<Net>> LocalTrainer::CohortNet(size_t lane) {
  while (cohort_nets_.size() <= lane) {
    SHEFL_ASSIGN_OR_RETURN(auto net, MakeModel(config_.model.name, shape_));
    net->to(device_);
    cohort_nets_.push_back(net);
  }
  return cohort_nets_[lane];
}

std::vector<absl::StatusOr<TrainedUpdate>> LocalTrainer::TrainCohort(
    const std::vector<CohortItem>& items) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<TrainedUpdate>> out(
      items.size(), absl::InternalError("not trained"));
  std::vector<CohortTask> tasks;
  std::vector<size_t> item_of;  // the item of each task
  std::vector<at::Tensor> globals;
  const TaskSettings* first = nullptr;
  try {
    for (size_t i = 0; i < items.size(); ++i) {
      const CohortItem& it = items[i];
      if (auto st = CheckTask(it.client, it.model); !st.ok()) {
        out[i] = st;
        continue;
      }
      // The stack shares one batch size and prox mu: the rest train alone.
      const TaskSettings& s = it.settings;
      if (first != nullptr && (s.batch_size != first->batch_size ||
                               s.prox_mu != first->prox_mu)) {
        out[i] = Train(0, it.client, it.model, *it.global, it.k, s);
        continue;
      }
      if (first == nullptr) first = &s;
      auto net = CohortNet(tasks.size());
      if (!net.ok()) return std::vector<absl::StatusOr<TrainedUpdate>>(
          items.size(), net.status());
      if (auto st = Unflatten(*it.global, **net); !st.ok()) {
        out[i] = st;
        continue;
      }
      CohortTask task;
      task.net = *net;
      task.indices = shards_.at(it.client);
      task.params = ParamsFor(it.client, it.model, s);
      globals.push_back(Flatten(**net).clone());
      if (s.prox_mu > 0) task.params.prox_reference = globals.back();
      tasks.push_back(std::move(task));
      item_of.push_back(i);
    }
    if (tasks.empty()) return out;
    std::vector<absl::StatusOr<TrainStats>> stats =
        CohortTrain(tasks, train_, ConfigFor(*first), device_);
    for (size_t t = 0; t < tasks.size(); ++t) {
      const CohortItem& it = items[item_of[t]];
      out[item_of[t]] =
          stats[t].ok() ? Package(it.client, it.model, it.settings.round,
                                  *tasks[t].net, globals[t], it.k, *stats[t],
                                  start)
                        : absl::StatusOr<TrainedUpdate>(stats[t].status());
    }
  } catch (const std::exception& e) {
    for (auto& o : out)
      if (!o.ok() && o.status().message() == "not trained")
        o = absl::InternalError(absl::StrCat("training the cohort: ", e.what()));
  }
  return out;
}

}  // namespace shefl
