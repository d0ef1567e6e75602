// A closed round's record, on a thread of its own beside the next round:
// the line of rounds.jsonl (with the evaluation, when the round has one),
// the checkpoint, ownership and /metrics; and the evaluation history that
// summary.json reports.
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "absl/strings/str_format.h"
#include "common/core/durable_file.h"
#include "common/core/failpoint.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "server/coordinator.h"
#include "server/round/eval_report.h"
#include "server/run/ownership_file.h"

namespace shefl {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

nlohmann::json Coordinator::RoundLine(const RoundState& rs, double wall,
                                      double own) const {
  const ExperimentConfig& cfg = state_->config;
  nlohmann::json by_client = nlohmann::json::object();
  nlohmann::json by_tier = {{"hpc", 0}, {"lpc", 0}};
  ByteCounts daemon;
  uint64_t up = 0, down = 0, control = 0;
  for (const auto& [client, b] : state_->ledger.ByClient(rs.round())) {
    up += b.payload_up;
    down += b.payload_down;
    control += b.control();
    if (client == kDaemonTraffic) {
      daemon = b;
      continue;
    }
    by_client[std::to_string(client)] = ToJson(b);
    const char* tier = TierName(ClientTier(cfg.clients, client));
    by_tier[tier] = by_tier[tier].get<uint64_t>() + b.payload_up;
  }
  nlohmann::json by_model = nlohmann::json::object();
  for (const auto& [model, b] : state_->ledger.ByModel(rs.round()))
    if (model != kNoModel)
      by_model[std::to_string(model)] = {{"payload_up", b.payload_up},
                                         {"payload_down", b.payload_down}};
  // When each daemon's last update came in: one slow daemon should hold
  // back only its own clients (tasks go out on each daemon's own feed).
  nlohmann::json done = nlohmann::json::object();
  for (const auto& [client, t] : rs.arrival_seconds()) {
    const auto owner = state_->registry.OwnerOf(client);
    const std::string name = owner ? owner->name : "(gone)";
    done[name] = std::max(done.value(name, 0.0), t);
  }
  // The evaluation's figures are added when it is done (AddEvaluation).
  return {{"round", rs.round()},
          {"daemon_done_seconds", done},
          {"wall_seconds", wall},
          {"coordinator_seconds", own},
          {"participants", rs.participants()},
          {"completed", rs.completed_clients()},
          {"updates_expected", rs.expected()},
          {"updates_accepted", rs.accepted()},
          {"updates_rejected", rs.rejected()},
          {"updates_late", rs.late()},
          {"refusals", rs.refusals()},
          {"refused_bytes", rs.refused_bytes()},
          {"bytes_up", up},
          {"bytes_down", down},
          {"control_bytes", control},
          {"bytes_up_by_tier", by_tier},
          {"bytes_by_client", by_client},
          {"bytes_by_model", by_model},
          {"daemon_bytes", ToJson(daemon)}};
}

nlohmann::json Coordinator::PendingLine(const RoundRun& r,
                                        const PendingRecord& rec,
                                        double record_wait) const {
  const RoundState& rs = *r.books;
  const ClientRegistry::Missing& missing = r.missing;
  nlohmann::json line = RoundLine(rs, rec.wall, rec.own);
  // Who was missing as the round opened, and whose tasks it stopped
  // waiting for (server/state/lost_daemons.h).
  line["clients_missing"] = missing.clients();
  nlohmann::json daemons = nlohmann::json::array();
  for (const ClientRegistry::MissingDaemon& d : missing.daemons)
    daemons.push_back(d.name);
  line["daemons_missing"] = std::move(daemons);
  line["clients_abandoned"] = rs.abandoned_clients();
  capacity_->AddFields(r.plan, &line, state_->metrics);
  line["wait_seconds"] = r.waited;
  line["record_wait_seconds"] = record_wait;
  for (const auto& [key, value] : rec.closed.fields.items()) line[key] = value;
  line["stallers"] = r.stallers;
  const DownloadBook::Bytes dl = state_->downloads.Round(rec.round);
  line["download_bytes_logical"] = dl.logical();
  line["download_bytes_physical"] = dl.physical();
  line["downloads"] = {
      {"logical", {{"up", dl.logical_up}, {"down", dl.logical_down}}},
      {"physical", {{"up", dl.physical_up}, {"down", dl.physical_down}}}};
  return line;
}

// The round's log line after its accuracy: bytes, updates, seconds.
std::string Coordinator::RecordSummary(const RoundRun& r,
                                       const PendingRecord& rec) const {
  const DownloadBook::Bytes dl = state_->downloads.Round(r.round);
  return absl::StrFormat(
      "up %.2f MB  down %.2f MB (%.2f MB on the wire)  %d accepted %d "
      "rejected %d late  %.1f s (own %.2f s)",
      rec.line["bytes_up"].get<double>() / 1e6,
      rec.line["bytes_down"].get<double>() / 1e6, dl.physical_down / 1e6,
      r.books->accepted(), r.books->rejected(), r.books->late(), rec.wall,
      rec.own) +
         (rec.line.contains("epsilon")
              ? absl::StrFormat("  epsilon %.3f",
                                rec.line["epsilon"].get<double>())
              : std::string());
}

absl::Status Coordinator::WaitForRecord() {
  if (!pending_record_.valid()) return absl::OkStatus();
  record_waited_ = true;
  absl::Status st = pending_record_.get();
  record_waited_ = false;  // before the next Record starts
  return st;
}

// A closed round's evaluation, line and checkpoint: the line first, then
// the checkpoint (a crash between the two re-runs the round on resume,
// which drops rounds.jsonl lines past the checkpoint).
absl::Status Coordinator::Record(const PendingRecord& rec) {
  const ExperimentConfig& cfg = state_->config;
  const auto eval_start = Clock::now();
  nlohmann::json line = rec.line;
  if (rec.evaluate) {
    SHEFL_ASSIGN_OR_RETURN(auto eval, rec.closed.evaluate(&line));
    RecordEvaluation(eval, rec.round);
  }
  AddEvaluation(&line, rec.evaluate);
  line["eval_seconds"] = Since(eval_start);
  SHEFL_RETURN_IF_ERROR(results_->AppendRound(line));
  Failpoint("rounds.after_append");
  // The optimiser's state first, under its round: a crash before the
  // checkpoint's rename leaves the previous round's state beside it.
  const auto& optimizer = rec.closed.optimizer;
  if (optimizer) {
    SHEFL_RETURN_IF_ERROR(
        optimizer->Save(results_->server_optimizer_path(rec.round), rec.round));
  }
  if (!rec.source_state.empty()) {
    SHEFL_RETURN_IF_ERROR(WriteFileDurably(
        results_->source_state_path(rec.round), rec.source_state));
  }
  SHEFL_RETURN_IF_ERROR(ModelStore::SaveCheckpoint(results_->checkpoint_path(),
                                                   rec.round, rec.closed.models,
                                                   rec.closed.versions));
  if (optimizer && rec.round > 1)
    std::remove(results_->server_optimizer_path(rec.round - 1).c_str());
  if (!rec.source_state.empty() && rec.round > 1)
    std::remove(results_->source_state_path(rec.round - 1).c_str());
  SHEFL_RETURN_IF_ERROR(SaveOwnership(results_->ownership_path(),
                                      state_->registry.GetOwnership()));
  state_->metrics.SetRound(rec.round);
  state_->metrics.ObserveRoundSeconds(rec.wall);
  const bool buffered = cfg.round.mode == "buffered";
  LogLine("coordinator",
          absl::StrFormat("%s %d/%d  acc %.4f  loss %.4f  %s",
                          buffered ? "application" : "round", rec.round,
                          buffered ? cfg.rounds * cfg.model.num_models
                                   : cfg.rounds,
                          last_eval_.ensemble_accuracy,
                          last_eval_.ensemble_nll, rec.summary));
  return absl::OkStatus();
}

// The round's evaluation, when it had one (`now`). A round in between
// (eval.every > 1) measured nothing, so nothing may read an accuracy off
// it: the fields every line holds (docs/DESIGN.md, "The contract") are null
// there, the others absent, beside "evaluated": false and the round last
// evaluated (0 before the first), which a resumed run restores.
void Coordinator::AddEvaluation(nlohmann::json* line, bool now) const {
  const EvalResult& e = last_eval_;
  (*line)["evaluated"] = now;
  (*line)["evaluation_round"] = last_eval_round_;
  if (!now) {
    for (const char* key : {"ensemble_accuracy", "model_accuracy", "ensemble_loss"})
      (*line)[key] = nullptr;
    return;
  }
  (*line)["ensemble_accuracy"] = e.ensemble_accuracy;
  (*line)["model_accuracy"] = e.member_accuracy;
  (*line)["ensemble_loss"] = e.ensemble_nll;
  (*line)["model_loss"] = e.member_nll;
  (*line)["ece"] = e.ece;
  (*line)["mean_entropy"] = e.mean_entropy;
  (*line)["member_variance"] = e.mean_member_variance;
  AddEvaluationDetails(e, line);
}

void Coordinator::RecordEvaluation(const EvalResult& r, int64_t round) {
  last_eval_ = r;
  evaluated_ = true;
  last_eval_round_ = round;
  best_accuracy_ = std::max(best_accuracy_, r.ensemble_accuracy);
  if (rounds_to_threshold_ < 0 &&
      r.ensemble_accuracy >= state_->config.eval.threshold)
    rounds_to_threshold_ = round;
  state_->metrics.SetEnsembleAccuracy(r.ensemble_accuracy);
  state_->metrics.SetEnsembleLoss(r.ensemble_nll);
  state_->metrics.SetEnsembleEce(r.ece);
  PublishEvaluationDetails(r, state_->metrics);
  for (size_t m = 0; m < r.member_accuracy.size(); ++m)
    state_->metrics.SetModelAccuracy(m, r.member_accuracy[m]);
}

}  // namespace shefl
