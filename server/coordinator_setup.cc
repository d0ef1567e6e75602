// Coordinator start and end: the gRPC and metrics servers (the last step
// of coordinator_builder.cc); the round's line and the summary; telling
// the daemons the run is over.
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/core/fd_reserve.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/core/status_macros.h"
#include "common/fed/methods/registry.h"
#include "common/learn/device.h"
#include "common/net/keepalive.h"
#include "common/net/metrics_server.h"
#include "common/net/run_label.h"
#include "server/coordinator.h"
#include "server/run/rounds_log.h"
#include "server/run_history.h"

namespace shefl {

absl::Status Coordinator::StartServers(
    const CoordinatorOptions& o,
    const std::shared_ptr<grpc::ServerCredentials>& creds) {
  metrics_linger_s_ = o.metrics_linger_s;
  // Every peer's connection takes a descriptor; rounds.jsonl and the
  // checkpoints must still open.
  const uint64_t files = RaiseFileLimit();
  HoldFileReserve();
  if (files < 4096)
    LogLine("coordinator", absl::StrCat("open-file limit is ", files,
                                        ": raise it (ulimit -n) to serve "
                                        "many daemons"));
  SHEFL_ASSIGN_OR_RETURN(
      exposer_,
      MetricsServer::Start(o.metrics_listen, state_->metrics.registry()));
  if (exposer_) exposer_->SetRunId(RunIdOfFolder(state_->config.out_dir));
  state_->metrics.SetRunStarted();
  service_ = std::make_unique<CoordinatorService>(
      state_.get(),
      o.max_calls_per_host > 0 ? o.max_calls_per_host
                               : CallLimits::kDefaultPerHost,
      o.max_calls_per_identity > 0 ? o.max_calls_per_identity
                                   : CallLimits::kDefaultPerIdentity);
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(o.listen, creds, &port_);
  AddServerKeepaliveAndLimits(&builder);
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_ || port_ == 0)
    return absl::UnavailableError(
        absl::StrCat("--listen ", o.listen,
                     ": cannot listen there: the port is in use (another "
                     "coordinator? `ss -ltnp` names it) or the address is "
                     "not this machine's"));
  if (!o.health_listen.empty()) {
    CoordinatorState* state = state_.get();
    SHEFL_ASSIGN_OR_RETURN(
        health_port_,
        HealthPort::Start(o.health_listen, [state] { return !state->stop; }));
  }
  LogLine("coordinator",
          absl::StrCat("run '", state_->config.name, "': ",
                       state_->config.model.num_models, " x ",
                       state_->config.model.name, " (d = ",
                       evaluator_->dim(), "), listening on port ", port_,
                       o.tls.insecure ? " (plaintext)"
                       : o.tls.ca_file.empty() ? " (TLS)" : " (mutual TLS)",
                       ", results in ", results_->dir()));
  return absl::OkStatus();
}

absl::Status Coordinator::Finish(double wall) {
  const ExperimentConfig& cfg = state_->config;
  // A resumed run's totals: the rounds recorded before it, then all of
  // this process's traffic.
  const std::string rounds = results_->dir() + "/rounds.jsonl";
  // The last round done: this process's, or the checkpoint's where it ran
  // none (a resumed run that was over already keeps its count).
  const int64_t done = buffered_rounds_done_ >= 0
                           ? buffered_rounds_done_
                           : std::max(state_->current_round(), first_round_);
  ByteCounts total = prior_bytes_;
  total += state_->ledger.Total();
  nlohmann::json summary = {
      {"name", cfg.name},
      {"method", cfg.method},
      {"rounds", done},
      {"final_accuracy", last_eval_.ensemble_accuracy},
      {"final_model_accuracy", last_eval_.member_accuracy},
      {"final_loss", last_eval_.ensemble_nll},
      {"best_accuracy", best_accuracy_},
      {"threshold", cfg.eval.threshold},
      {"rounds_to_threshold", nullptr},
      {"total_bytes_up", total.payload_up},
      {"total_bytes_down", total.payload_down},
      {"total_control_bytes", total.control()},
      {"total_download_bytes_logical",
       RoundsLog::Sum(rounds, "download_bytes_logical")},
      {"total_download_bytes_physical",
       RoundsLog::Sum(rounds, "download_bytes_physical")},
      {"bytes", ToJson(total)},
      {"wall_seconds", wall},
      {"coordinator_peak_rss_bytes", PeakRssBytes()}};
  if (!registration_.is_null()) summary["registration"] = registration_;
  if (!buffered_summary_.is_null()) {
    // A buffered run's lines are applications, which hold no downloads.
    summary["buffered"] = buffered_summary_;
    for (const char* kind : {"logical", "physical"})
      summary[absl::StrCat("total_download_bytes_", kind)] =
          buffered_summary_[absl::StrCat("download_bytes_", kind)];
  }
  source_->AddSummary(&summary);
  summary["clients_lost"] = lost_->ToJson();
  kind_->AddSummary(RoundsLog::ReadEnds(rounds).last, &summary);
  if (rounds_to_threshold_ >= 0)
    summary["rounds_to_threshold"] = rounds_to_threshold_;
  // A stop (SIGTERM) before the last round is no end: say how it goes on.
  const bool stopped = done < cfg.rounds;
  LogLine("coordinator",
          absl::StrCat(stopped ? "stopped after round " : "run over after round ",
                       done,
                       stopped ? ": accuracy " : ": final accuracy ",
                       last_eval_.ensemble_accuracy, ", results in ", results_->dir(),
                       stopped ? " (--continue with the same --out goes on)" : ""));
  return results_->WriteSummary(summary);
}

void Coordinator::ShutdownDaemons() {
  v1::FeedMessage bye;
  bye.mutable_shutdown()->set_reason(state_->stop ? "coordinator stopped"
                                                  : "run complete");
  for (const auto& s : state_->registry.Sessions()) s->feed.Push(bye);
  // Give the feeds a moment to deliver the shutdown before we go.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (state_->registry.ConnectedClients() > 0 &&
         std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

Coordinator::~Coordinator() {
  if (state_) {
    state_->stop = true;
    for (const auto& s : state_->registry.Sessions()) s->feed.Close();
  }
  if (server_) server_->Shutdown(std::chrono::system_clock::now() +
                                 std::chrono::seconds(2));
}

}  // namespace shefl
