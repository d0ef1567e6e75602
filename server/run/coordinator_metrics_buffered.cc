// The metrics of round.mode buffered (docs/RUNNING.md lists them): how
// full each model's buffer is, the tasks in flight, the applications and
// the staleness of what they applied. A synchronous run registers them
// too and leaves them at zero, so a dashboard needs no second layout.
#include <string>

#include "server/run/coordinator_metrics.h"

namespace shefl {

void CoordinatorMetrics::RegisterBuffered(prometheus::Registry& r) {
  buffer_fill_ = &prometheus::BuildGauge()
                      .Name("shefl_buffer_fill")
                      .Help("round.mode buffered: updates waiting in a "
                            "model's buffer")
                      .Register(r);
  tasks_in_flight_ = &prometheus::BuildGauge()
                          .Name("shefl_tasks_in_flight")
                          .Help("round.mode buffered: tasks handed out whose "
                                "updates are not yet applied or lost")
                          .Register(r)
                          .Add({});
  applications_ = &prometheus::BuildCounter()
                       .Name("shefl_buffer_applications_total")
                       .Help("round.mode buffered: buffers applied to a "
                             "model")
                       .Register(r)
                       .Add({});
  staleness_ = &prometheus::BuildHistogram()
                    .Name("shefl_update_staleness")
                    .Help("round.mode buffered: applications of its model "
                          "between an update's task and its application")
                    .Register(r)
                    .Add({}, prometheus::Histogram::BucketBoundaries{
                                 0, 1, 2, 4, 8, 16, 32, 64});
}

void CoordinatorMetrics::SetBufferFill(int64_t model, double updates) {
  buffer_fill_->Add({{"model", std::to_string(model)}}).Set(updates);
}

void CoordinatorMetrics::CountApplication(
    const std::vector<int64_t>& staleness) {
  applications_->Increment();
  for (int64_t tau : staleness) staleness_->Observe(static_cast<double>(tau));
}

}  // namespace shefl
