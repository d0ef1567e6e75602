// The coordinator's Prometheus metrics (names fixed by docs/DESIGN.md, "The contract").
// Thread-safe: prometheus-cpp's metrics are.
#ifndef SHEFL_SERVER_RUN_COORDINATOR_METRICS_H_
#define SHEFL_SERVER_RUN_COORDINATOR_METRICS_H_

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/fed/client_metrics.h"

namespace shefl {

class CoordinatorMetrics {
 public:
  CoordinatorMetrics();

  const std::shared_ptr<prometheus::Registry>& registry() const {
    return registry_;
  }

  // Also stamps the wall-clock time of the round's end, so an alert can
  // tell a stalled run (deploy/prometheus/rules/shefl-alerts.yml).
  void SetRound(int64_t round);
  // shefl_rounds_planned: the config's `rounds`, for progress and ETA.
  void SetRoundsPlanned(int64_t rounds) {
    rounds_planned_->Set(static_cast<double>(rounds));
  }
  // shefl_run_finished: 0 while the run goes on, 1 once its last round is
  // recorded (seen while --metrics-linger-s keeps /metrics up). The
  // daemon-down and coordinator-down alerts read it: daemons leaving and
  // the coordinator stopping after a finished run are no faults.
  void SetRunFinished(bool finished) { run_finished_->Set(finished ? 1 : 0); }
  // shefl_run_start_timestamp_seconds: when this process took the run up
  // (a --resume is a new start). Of the runs one host served, the alerts
  // take the one started last as the host's current run.
  void SetRunStarted();
  // The open round's progress (shefl run's status line, dashboards):
  // shefl_round_uploads_expected, the uploads its tasks ask for, and
  // shefl_round_uploads_received, those accepted so far.
  void OpenRound(int64_t expected_uploads) {
    round_uploads_expected_->Set(static_cast<double>(expected_uploads));
    round_uploads_received_->Set(0);
  }
  void CountRoundUpload(double n = 1) { round_uploads_received_->Increment(n); }
  // A resumed run's gauges, from the rounds its results folder recorded
  // (the last line, and the last line with "evaluated": true): round,
  // accuracy, loss, ECE, member accuracy, uncertainty, client-level and
  // capacity/HASA figures. Without this every gauge read 0 after a resume
  // until the next evaluation, and ShEFLAccuracyDropped fired. The round's
  // end time is stamped now: the downtime is the coordinator-down alert's.
  void Restore(const nlohmann::json& last_line,
               const nlohmann::json& last_evaluated);
  // Restore() from a rounds.jsonl (already cut back to the checkpoint).
  void RestoreFromRounds(const std::string& rounds_jsonl);
  void ObserveRoundSeconds(double s) { round_duration_->Observe(s); }
  void SetEnsembleAccuracy(double a) { ensemble_accuracy_->Set(a); }
  void SetModelAccuracy(int64_t model, double a);
  void SetEnsembleLoss(double l) { ensemble_loss_->Set(l); }
  void SetEnsembleEce(double e) { ensemble_ece_->Set(e); }
  // the Fed-ensemble paper's uncertainty of the ensemble's test predictions (common/learn/evaluate.h):
  // shefl_ensemble_entropy{subset}, shefl_ensemble_predictive_variance{subset}
  // with subset "all" | "correct" | "wrong", shefl_ensemble_mutual_information.
  void SetUncertainty(double entropy, double entropy_correct,
                      double entropy_wrong, double variance,
                      double variance_correct, double variance_wrong,
                      double mutual_information);
  // shefl_client_level_accuracy{stat="mean|worst|p10",weights}; weights:
  // "uniform" | "personal" (the HASA paper, Eq. 5-7).
  void SetClientLevel(const std::string& weights, const ClientLevelSummary& s);
  void SetPersonalWeightEntropy(double h) { personal_weight_entropy_->Set(h); }
  // Capacity levels and HASA (server/round/capacity_plan.h), each round they are
  // in play: shefl_round_models_per_client{stat="mean|min|max"} over the
  // round's clients; for hasa also shefl_hasa_budget{kind="target|
  // realised"}, shefl_hasa_clients_scored and shefl_hasa_label_count_bytes
  // (label histograms received so far, all clients).
  void SetModelsPerClient(double mean, double min, double max);
  void SetHasa(double target, double realised, int64_t scored,
               uint64_t label_bytes);
  // direction: "up" | "down"; tier: "hpc" | "lpc" | "control"
  void AddBytes(const std::string& direction, const std::string& tier,
                uint64_t bytes);
  // Secure aggregation's share of shefl_bytes_total by stage ("setup" |
  // "masked_input" | "unmask"): shefl_secure_bytes_total{stage,direction};
  // and the sessions by outcome ("finished" | "abandoned"):
  // shefl_secure_sessions_total{outcome}.
  void AddSecureBytes(const std::string& direction, const std::string& stage,
                      uint64_t bytes);
  void CountSecureSession(const std::string& outcome);
  // Model downloads: logical (each served client's own) and physical
  // (what crossed the wire) bytes.
  void AddDownloadBytes(uint64_t logical, uint64_t physical);
  // result: "accepted" | "rejected" | "late"
  void CountUpdate(const std::string& result, double n = 1);
  // rpc: "register" | "feed" | "download" | "upload"; reason: see
  // RefusalReason (server/state/round_state.h), a fixed set of words.
  void CountRefusal(const std::string& rpc, const std::string& reason,
                    uint64_t bytes);
  // An aggregate with a non-finite weight that was not published.
  void CountModelNotPublished() { not_published_->Increment(); }
  // The robust bounds' work on a closed round (common/fed/robust.h):
  // `action` refused_norm | clipped_norm | trimmed_values.
  void CountRobust(const std::string& action, int64_t n);
  // The largest weight magnitude over the published members.
  void SetMaxAbsWeight(double v) { max_abs_weight_->Set(v); }
  // Staller strikes so far and the clients sitting out the next round.
  void SetStallers(int64_t strikes, int64_t sitting_out);
  // Clients of daemons blamed for corrupt secure sums, sitting out the
  // next round (server/state/party_blame.h).
  void SetSecureBenched(double clients) { secure_benched_->Set(clients); }
  void SetPrivacy(double epsilon, double clip) {
    privacy_epsilon_->Set(epsilon);
    privacy_clip_->Set(clip);
  }
  // Also sets shefl_clients_missing (N less the connected).
  void SetClientsConnected(int64_t n) {
    clients_connected_->Set(static_cast<double>(n));
    clients_missing_->Set(static_cast<double>(num_clients_.load() - n));
  }
  // N and the quorum a round needs (server/state/lost_daemons.h).
  void SetClientsExpected(int64_t num_clients, int64_t quorum);

  // round.mode buffered (coordinator_metrics_buffered.cc): updates waiting
  // in model `model`'s buffer, tasks in flight, and one application with
  // the staleness of each update it applied.
  void SetBufferFill(int64_t model, double updates);
  void SetTasksInFlight(double tasks) { tasks_in_flight_->Set(tasks); }
  void CountApplication(const std::vector<int64_t>& staleness);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Gauge* round_end_time_ = nullptr;
  prometheus::Gauge* round_;
  prometheus::Gauge* rounds_planned_ = nullptr;
  prometheus::Gauge* run_finished_ = nullptr;
  prometheus::Gauge* run_started_ = nullptr;
  prometheus::Gauge* round_uploads_expected_ = nullptr;
  prometheus::Gauge* round_uploads_received_ = nullptr;
  prometheus::Histogram* round_duration_;
  prometheus::Gauge* ensemble_accuracy_;
  prometheus::Gauge* ensemble_loss_;
  prometheus::Gauge* ensemble_ece_ = nullptr;
  prometheus::Family<prometheus::Gauge>* entropy_ = nullptr;
  prometheus::Family<prometheus::Gauge>* predictive_variance_ = nullptr;
  prometheus::Gauge* mutual_information_ = nullptr;
  prometheus::Family<prometheus::Gauge>* client_level_ = nullptr;
  prometheus::Gauge* personal_weight_entropy_ = nullptr;
  prometheus::Family<prometheus::Gauge>* models_per_client_ = nullptr;
  prometheus::Family<prometheus::Gauge>* hasa_budget_ = nullptr;
  prometheus::Gauge* hasa_scored_ = nullptr;
  prometheus::Gauge* hasa_label_bytes_ = nullptr;
  prometheus::Family<prometheus::Gauge>* model_accuracy_;
  prometheus::Family<prometheus::Counter>* bytes_;
  prometheus::Family<prometheus::Counter>* download_bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* secure_bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* secure_sessions_ = nullptr;
  prometheus::Family<prometheus::Counter>* updates_;
  prometheus::Gauge* clients_connected_;
  prometheus::Gauge* clients_missing_ = nullptr;
  prometheus::Gauge* clients_quorum_ = nullptr;
  std::atomic<int64_t> num_clients_{0};
  prometheus::Family<prometheus::Counter>* refusals_;
  prometheus::Counter* refused_bytes_;
  prometheus::Counter* not_published_;
  prometheus::Family<prometheus::Counter>* robust_ = nullptr;
  prometheus::Gauge* max_abs_weight_ = nullptr;
  prometheus::Gauge* staller_strikes_ = nullptr;
  prometheus::Gauge* clients_sitting_out_ = nullptr;
  prometheus::Gauge* secure_benched_ = nullptr;
  prometheus::Gauge* privacy_epsilon_ = nullptr;
  prometheus::Gauge* privacy_clip_ = nullptr;
  void RegisterBuffered(prometheus::Registry& r);
  prometheus::Family<prometheus::Gauge>* buffer_fill_ = nullptr;
  prometheus::Gauge* tasks_in_flight_ = nullptr;
  prometheus::Counter* applications_ = nullptr;
  prometheus::Histogram* staleness_ = nullptr;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_COORDINATOR_METRICS_H_
