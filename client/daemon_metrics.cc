#include "client/daemon_metrics.h"

namespace shefl {

const char* DaemonStateName(DaemonState s) {
  switch (s) {
    case DaemonState::kDisconnected: return "disconnected";
    case DaemonState::kIdle: return "idle";
    case DaemonState::kTraining: return "training";
  }
  return "unknown";
}

DaemonMetrics::DaemonMetrics(const std::string& name)
    : registry_(std::make_shared<prometheus::Registry>()) {
  train_seconds_ =
      &prometheus::BuildHistogram()
           .Name("shefl_client_train_seconds")
           .Help("Local training time of one (client, model) task")
           .Register(*registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{
                        0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300});
  bytes_ = &prometheus::BuildCounter()
                .Name("shefl_client_bytes_total")
                .Help("gRPC bytes (serialized + 5-byte header) by direction")
                .Register(*registry_);
  download_bytes_ =
      &prometheus::BuildCounter()
           .Name("shefl_client_download_bytes_total")
           .Help("Model downloads: logical (what each client's own download "
                 "would cost) and physical (what crossed the wire; a version "
                 "is fetched once for all clients of the daemon)")
           .Register(*registry_);
  rss_ = &prometheus::BuildGauge()
              .Name("shefl_client_resident_memory_bytes")
              .Help("Resident memory of the daemon process")
              .Register(*registry_)
              .Add({});
  state_gauges_ = &prometheus::BuildGauge()
                      .Name("shefl_client_state")
                      .Help("1 for the daemon's state (disconnected, idle: "
                            "connected without a task, training), else 0")
                      .Register(*registry_);
  SetState(DaemonState::kDisconnected);
  // Dashboards and alerts name a daemon by its --name, not by its scrape
  // address: they join shefl_client_info{name} on instance.
  prometheus::BuildGauge()
      .Name("shefl_client_info")
      .Help("Always 1; the daemon's --name in the label `name`")
      .Register(*registry_)
      .Add({{"name", name}})
      .Set(1);
}

void DaemonMetrics::SetState(DaemonState s) {
  state_ = s;
  for (DaemonState each : {DaemonState::kDisconnected, DaemonState::kIdle,
                           DaemonState::kTraining})
    state_gauges_->Add({{"state", DaemonStateName(each)}}).Set(each == s ? 1 : 0);
}

}  // namespace shefl
