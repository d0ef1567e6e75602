#include "server/run/coordinator_metrics.h"

#include <chrono>

namespace shefl {

void CoordinatorMetrics::SetRound(int64_t round) {
  round_->Set(static_cast<double>(round));
  round_end_time_->Set(std::chrono::duration<double>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count());
}

void CoordinatorMetrics::SetRunStarted() {
  run_started_->Set(std::chrono::duration<double>(
                        std::chrono::system_clock::now().time_since_epoch())
                        .count());
}

CoordinatorMetrics::CoordinatorMetrics()
    : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  round_ = &prometheus::BuildGauge()
                .Name("shefl_round")
                .Help("Last completed round (from 1)")
                .Register(r)
                .Add({});
  rounds_planned_ = &prometheus::BuildGauge()
                         .Name("shefl_rounds_planned")
                         .Help("Rounds the run's config plans (its `rounds`)")
                         .Register(r)
                         .Add({});
  run_finished_ = &prometheus::BuildGauge()
                       .Name("shefl_run_finished")
                       .Help("1 once the run's last round is recorded, "
                             "0 while it goes on")
                       .Register(r)
                       .Add({});
  run_started_ = &prometheus::BuildGauge()
                      .Name("shefl_run_start_timestamp_seconds")
                      .Help("Unix time at which this coordinator took the run "
                            "up (its start, or its last --resume)")
                      .Register(r)
                      .Add({});
  round_uploads_expected_ = &prometheus::BuildGauge()
                                 .Name("shefl_round_uploads_expected")
                                 .Help("Uploads the open round's tasks ask for")
                                 .Register(r)
                                 .Add({});
  round_uploads_received_ = &prometheus::BuildGauge()
                                 .Name("shefl_round_uploads_received")
                                 .Help("Uploads of the open round accepted so far")
                                 .Register(r)
                                 .Add({});
  round_end_time_ = &prometheus::BuildGauge()
                         .Name("shefl_round_end_timestamp_seconds")
                         .Help("Unix time at which the last round ended")
                         .Register(r)
                         .Add({});
  round_duration_ =
      &prometheus::BuildHistogram()
           .Name("shefl_round_duration_seconds")
           .Help("Wall time of a round, from task push to aggregate applied")
           .Register(r)
           .Add({}, prometheus::Histogram::BucketBoundaries{
                        0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800});
  ensemble_accuracy_ = &prometheus::BuildGauge()
                            .Name("shefl_ensemble_accuracy")
                            .Help("Ensemble test accuracy (fraction)")
                            .Register(r)
                            .Add({});
  ensemble_loss_ = &prometheus::BuildGauge()
                        .Name("shefl_ensemble_loss")
                        .Help("Ensemble test NLL")
                        .Register(r)
                        .Add({});
  ensemble_ece_ = &prometheus::BuildGauge()
                       .Name("shefl_ensemble_ece")
                       .Help("Ensemble expected calibration error (15 bins)")
                       .Register(r)
                       .Add({});
  entropy_ = &prometheus::BuildGauge()
                  .Name("shefl_ensemble_entropy")
                  .Help("Mean predictive entropy of the ensemble's test "
                        "predictions (nats), over all, correct or wrong ones")
                  .Register(r);
  predictive_variance_ =
      &prometheus::BuildGauge()
           .Name("shefl_ensemble_predictive_variance")
           .Help("Mean variance across members of the predictive "
                 "distribution (the Fed-ensemble paper, Eq. 10, summed over classes), over all, "
                 "correct or wrong test predictions")
           .Register(r);
  mutual_information_ = &prometheus::BuildGauge()
                             .Name("shefl_ensemble_mutual_information")
                             .Help("Mean ensemble entropy less the members' "
                                   "mean entropy (nats)")
                             .Register(r)
                             .Add({});
  client_level_ = &prometheus::BuildGauge()
                       .Name("shefl_client_level_accuracy")
                       .Help("Client-level accuracy on each client's "
                             "held-out split (the HASA paper, Eq. 5-7): mean, worst, "
                             "10th percentile; uniform or personal weights")
                       .Register(r);
  personal_weight_entropy_ =
      &prometheus::BuildGauge()
           .Name("shefl_personal_weight_entropy")
           .Help("Mean over clients of the entropy of their personalised "
                 "member weights (nats; log M is uniform)")
           .Register(r)
           .Add({});
  models_per_client_ =
      &prometheus::BuildGauge()
           .Name("shefl_round_models_per_client")
           .Help("Models each client of the round was given (capacity "
                 "levels, HASA): mean, min, max over the round's clients")
           .Register(r);
  hasa_budget_ = &prometheus::BuildGauge()
                      .Name("shefl_hasa_budget")
                      .Help("HASA's size-weighted width budget: the "
                            "config's target and the allocation's realised")
                      .Register(r);
  hasa_scored_ = &prometheus::BuildGauge()
                      .Name("shefl_hasa_clients_scored")
                      .Help("Clients whose label histogram the HASA "
                            "allocation used")
                      .Register(r)
                      .Add({});
  hasa_label_bytes_ = &prometheus::BuildGauge()
                           .Name("shefl_hasa_label_count_bytes")
                           .Help("Bytes of label histograms received from "
                                 "the daemons so far (all clients)")
                           .Register(r)
                           .Add({});
  model_accuracy_ = &prometheus::BuildGauge()
                         .Name("shefl_model_accuracy")
                         .Help("Test accuracy of each ensemble member")
                         .Register(r);
  bytes_ = &prometheus::BuildCounter()
                .Name("shefl_bytes_total")
                .Help("gRPC bytes (serialized + 5-byte header) by direction "
                      "and tier; control traffic has tier=\"control\"")
                .Register(r);
  secure_bytes_ = &prometheus::BuildCounter()
                       .Name("shefl_secure_bytes_total")
                       .Help("Secure aggregation's bytes (also in "
                             "shefl_bytes_total) by stage: setup, "
                             "masked_input, unmask")
                       .Register(r);
  secure_sessions_ = &prometheus::BuildCounter()
                          .Name("shefl_secure_sessions_total")
                          .Help("Secure-aggregation sessions (one per round "
                                "and model) by outcome: finished, abandoned, "
                                "refused, stopped, not_run (fewer daemons "
                                "trained the model than secure.min_parties)")
                          .Register(r);
  download_bytes_ =
      &prometheus::BuildCounter()
           .Name("shefl_download_bytes_total")
           .Help("Model downloads by kind: logical (what each served "
                 "client's own download would cost; also in "
                 "shefl_bytes_total) and physical (what crossed the wire: a "
                 "daemon fetches a version once for all its clients)")
           .Register(r);
  for (const char* kind : {"logical", "physical"}) download_bytes_->Add({{"kind", kind}});
  updates_ = &prometheus::BuildCounter()
                  .Name("shefl_updates_total")
                  .Help("Uploaded updates by result")
                  .Register(r);
  for (const char* res : {"accepted", "rejected", "late"})
    updates_->Add({{"result", res}});
  clients_connected_ = &prometheus::BuildGauge()
                            .Name("shefl_clients_connected")
                            .Help("Logical clients whose daemon holds a feed")
                            .Register(r)
                            .Add({});
  clients_missing_ = &prometheus::BuildGauge()
                          .Name("shefl_clients_missing")
                          .Help("Logical clients whose daemon holds no feed "
                                "(gone, or not yet registered)")
                          .Register(r)
                          .Add({});
  clients_quorum_ = &prometheus::BuildGauge()
                         .Name("shefl_clients_quorum")
                         .Help("Connected clients a round needs "
                               "(clients.min_connected)")
                         .Register(r)
                         .Add({});
  refusals_ = &prometheus::BuildCounter()
                   .Name("shefl_refusals_total")
                   .Help("Refused RPCs by RPC and reason; their bytes are "
                         "not in shefl_bytes_total")
                   .Register(r);
  refused_bytes_ = &prometheus::BuildCounter()
                        .Name("shefl_refused_bytes_total")
                        .Help("Bytes of refused RPCs that were read")
                        .Register(r)
                        .Add({});
  not_published_ = &prometheus::BuildCounter()
                        .Name("shefl_models_not_published_total")
                        .Help("Aggregates refused for a non-finite weight "
                              "(the previous model was kept)")
                        .Register(r)
                        .Add({});
  robust_ = &prometheus::BuildCounter()
                 .Name("shefl_robust_updates_total")
                 .Help("Updates the robust bounds left out or clipped, and "
                       "coordinate values trimming moved (by action)")
                 .Register(r);
  max_abs_weight_ = &prometheus::BuildGauge()
                         .Name("shefl_model_max_abs_weight")
                         .Help("Largest weight magnitude over the members "
                               "after the last aggregation")
                         .Register(r)
                         .Add({});
  staller_strikes_ = &prometheus::BuildGauge()
                          .Name("shefl_staller_strikes")
                          .Help("Strikes so far against sampled clients that "
                                "sent nothing by a round's deadline")
                          .Register(r)
                          .Add({});
  clients_sitting_out_ = &prometheus::BuildGauge()
                              .Name("shefl_clients_sitting_out")
                              .Help("Clients benched as stallers for the "
                                    "next round")
                              .Register(r)
                              .Add({});
  secure_benched_ = &prometheus::BuildGauge()
                         .Name("shefl_secure_benched_clients")
                         .Help("Clients of daemons blamed for corrupt "
                               "secure sums, sitting out the next round")
                         .Register(r)
                         .Add({});
  privacy_epsilon_ = &prometheus::BuildGauge()
                          .Name("shefl_privacy_epsilon")
                          .Help("Differential privacy: epsilon spent so far "
                                "at the run's delta (privacy.mode on)")
                          .Register(r)
                          .Add({});
  privacy_clip_ = &prometheus::BuildGauge()
                       .Name("shefl_privacy_clip")
                       .Help("Differential privacy: the clip S of the next "
                             "round's joint client updates")
                       .Register(r)
                       .Add({});
  RegisterBuffered(r);
}

void CoordinatorMetrics::SetClientsExpected(int64_t num_clients,
                                            int64_t quorum) {
  num_clients_ = num_clients;
  clients_quorum_->Set(static_cast<double>(quorum));
  clients_missing_->Set(static_cast<double>(num_clients));  // none connected
}

void CoordinatorMetrics::SetStallers(int64_t strikes, int64_t sitting_out) {
  staller_strikes_->Set(static_cast<double>(strikes));
  clients_sitting_out_->Set(static_cast<double>(sitting_out));
}

void CoordinatorMetrics::CountRobust(const std::string& action, int64_t n) {
  if (n > 0) robust_->Add({{"action", action}}).Increment(static_cast<double>(n));
}

void CoordinatorMetrics::CountRefusal(const std::string& rpc,
                                      const std::string& reason,
                                      uint64_t bytes) {
  refusals_->Add({{"rpc", rpc}, {"reason", reason}}).Increment();
  refused_bytes_->Increment(static_cast<double>(bytes));
}

void CoordinatorMetrics::SetUncertainty(double entropy, double entropy_correct,
                                        double entropy_wrong, double variance,
                                        double variance_correct,
                                        double variance_wrong,
                                        double mutual_information) {
  entropy_->Add({{"subset", "all"}}).Set(entropy);
  entropy_->Add({{"subset", "correct"}}).Set(entropy_correct);
  entropy_->Add({{"subset", "wrong"}}).Set(entropy_wrong);
  predictive_variance_->Add({{"subset", "all"}}).Set(variance);
  predictive_variance_->Add({{"subset", "correct"}}).Set(variance_correct);
  predictive_variance_->Add({{"subset", "wrong"}}).Set(variance_wrong);
  mutual_information_->Set(mutual_information);
}

void CoordinatorMetrics::SetClientLevel(const std::string& weights,
                                        const ClientLevelSummary& s) {
  client_level_->Add({{"stat", "mean"}, {"weights", weights}}).Set(s.mean);
  client_level_->Add({{"stat", "worst"}, {"weights", weights}}).Set(s.worst);
  client_level_->Add({{"stat", "p10"}, {"weights", weights}}).Set(s.p10);
}

void CoordinatorMetrics::SetModelsPerClient(double mean, double min,
                                            double max) {
  models_per_client_->Add({{"stat", "mean"}}).Set(mean);
  models_per_client_->Add({{"stat", "min"}}).Set(min);
  models_per_client_->Add({{"stat", "max"}}).Set(max);
}

void CoordinatorMetrics::SetHasa(double target, double realised,
                                 int64_t scored, uint64_t label_bytes) {
  hasa_budget_->Add({{"kind", "target"}}).Set(target);
  hasa_budget_->Add({{"kind", "realised"}}).Set(realised);
  hasa_scored_->Set(static_cast<double>(scored));
  hasa_label_bytes_->Set(static_cast<double>(label_bytes));
}

void CoordinatorMetrics::SetModelAccuracy(int64_t model, double a) {
  model_accuracy_->Add({{"model", std::to_string(model)}}).Set(a);
}

void CoordinatorMetrics::AddBytes(const std::string& direction,
                                  const std::string& tier, uint64_t bytes) {
  bytes_->Add({{"direction", direction}, {"tier", tier}})
      .Increment(static_cast<double>(bytes));
}

void CoordinatorMetrics::AddSecureBytes(const std::string& direction,
                                        const std::string& stage,
                                        uint64_t bytes) {
  secure_bytes_->Add({{"direction", direction}, {"stage", stage}})
      .Increment(static_cast<double>(bytes));
}

void CoordinatorMetrics::CountSecureSession(const std::string& outcome) {
  secure_sessions_->Add({{"outcome", outcome}}).Increment();
}

void CoordinatorMetrics::AddDownloadBytes(uint64_t logical,
                                          uint64_t physical) {
  download_bytes_->Add({{"kind", "logical"}}).Increment(static_cast<double>(logical));
  download_bytes_->Add({{"kind", "physical"}}).Increment(static_cast<double>(physical));
}

void CoordinatorMetrics::CountUpdate(const std::string& result, double n) {
  updates_->Add({{"result", result}}).Increment(n);
}

}  // namespace shefl
