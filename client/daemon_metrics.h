// The daemon's Prometheus metrics (their names are a contract that
// dashboards and alerts rely on, docs/MONITORING.md), registered in one
// registry in a fixed order, so /metrics lists them alike from run to run;
// and the daemon's state as the shefl_client_state gauges and /healthz
// show it.
// Thread-safe: prometheus-cpp's metrics are; the state is atomic.
#ifndef SHEFL_CLIENT_DAEMON_METRICS_H_
#define SHEFL_CLIENT_DAEMON_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <memory>
#include <string>

namespace shefl {

// What /healthz and shefl_client_state{state} say.
enum class DaemonState { kDisconnected, kIdle, kTraining };
const char* DaemonStateName(DaemonState s);

class DaemonMetrics {
 public:
  // Registers every metric; shefl_client_info{name} carries `name`.
  explicit DaemonMetrics(const std::string& name);

  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }
  prometheus::Histogram* train_seconds() const { return train_seconds_; }
  prometheus::Family<prometheus::Counter>* bytes() const { return bytes_; }
  prometheus::Family<prometheus::Counter>* download_bytes() const {
    return download_bytes_;
  }
  prometheus::Gauge* resident_memory() const { return rss_; }

  void SetState(DaemonState s);
  DaemonState state() const { return state_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Histogram* train_seconds_ = nullptr;
  prometheus::Family<prometheus::Counter>* bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* download_bytes_ = nullptr;
  prometheus::Gauge* rss_ = nullptr;
  prometheus::Family<prometheus::Gauge>* state_gauges_ = nullptr;
  std::atomic<DaemonState> state_{DaemonState::kDisconnected};
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_DAEMON_METRICS_H_
