// The round state machine. One round, as docs/DESIGN.md tells it:
//   1. sample the cohort, assign models by the permutation, compute k;
//   2. push a task to each sampled client;
//   3-4. the gRPC handlers serve downloads and take uploads meanwhile;
//   5. when every update is in or the deadline passes: close the round,
//      aggregate, evaluate, checkpoint, record, and start the next.
#include "server/coordinator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/core/failpoint.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/fed/lr_schedule.h"
#include "server/round/eval_report.h"
#include "server/run/ownership_file.h"
#include "server/waiting_line.h"

namespace shefl {

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

double Coordinator::Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

absl::Status Coordinator::Run() {
  const auto start = Clock::now();
  // A resumed run whose last round is done only rewrites its summary.
  if (first_round_ < state_->config.rounds) {
    const uint64_t rss_before = ResidentBytes();
    if (absl::Status st = WaitForDaemons(first_round_ + 1); !st.ok())
      return GiveUp(st);
    const int64_t n = state_->registry.ConnectedClients();
    const double grew =
        static_cast<double>(ResidentBytes()) - static_cast<double>(rss_before);
    registration_ = {{"clients", n},
                     {"seconds", Since(start)},
                     {"rss_growth_bytes", grew},
                     {"bytes_per_client", n > 0 ? grew / n : 0.0}};
    LogLine("coordinator",
            absl::StrFormat("%d clients connected after %.1f s; the registry "
                            "grew resident memory by %.1f MiB (%.0f B a client)",
                            n, Since(start), grew / (1 << 20),
                            n > 0 ? grew / n : 0.0));
  }
  for (int64_t t = first_round_; t < state_->config.rounds; ++t) {
    if (t > first_round_)
      if (absl::Status st = WaitForDaemons(t + 1); !st.ok()) return GiveUp(st);
    if (state_->stop) break;
    if (absl::Status st = RunRound(t); !st.ok()) {
      WaitForRecord().IgnoreError();
      LogLine("coordinator", absl::StrCat("round ", t + 1, " failed: ",
                                          st.message()));
      return st;
    }
  }
  // The last round's evaluation, line and checkpoint.
  if (auto st = WaitForRecord(); !st.ok()) return st;
  const double wall = prior_wall_seconds_ + Since(start);
  // Daemons first: their shutdown messages are booked too, so summary.json
  // holds every byte the run moved (and equals shefl_bytes_total).
  state_->metrics.SetRunFinished(true);  // daemons leaving is no fault now
  ShutdownDaemons();
  auto st = Finish(wall);
  if (st.ok()) LingerForScrapes();
  return st;
}

void Coordinator::LingerForScrapes() {
  if (metrics_linger_s_ <= 0 || state_->stop || exposer_ == nullptr) return;
  LogLine("coordinator",
          absl::StrFormat("serving the final /metrics for %.0f s (SIGTERM "
                          "ends it)",
                          metrics_linger_s_));
  const auto until = Clock::now() + std::chrono::duration<double>(metrics_linger_s_);
  while (!state_->stop && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

absl::Status Coordinator::RunRound(int64_t t) {
  const int64_t round = t + 1;
  const ExperimentConfig& cfg = state_->config;
  const auto start = Clock::now();

  // 1. Cohort, assignment and budgets.
  // Only clients whose daemon is connected now: a lost daemon's clients
  // would only cost the round its deadline.
  // Stallers sitting out (server/state/staller_book.h) are left out too.
  // With every client connected and none sitting out there is no filter:
  // the draw is the same, and costs O(C) instead of O(N).
  Availability connected = [this, round](int64_t id) {
    return state_->registry.IsConnected(id) && !stallers_->Benched(id, round);
  };
  if (state_->registry.AllConnected() && stallers_->BenchedCount(round) == 0)
    connected = nullptr;
  const ClientRegistry::Missing missing = state_->registry.MissingNow();
  const RoundPlan plan = kind_->Plan(t, connected);
  std::vector<uint64_t> versions;
  for (int64_t m = 0; m < cfg.model.num_models; ++m)
    versions.push_back(state_->store->Version(m));
  const auto deadline =
      start + std::chrono::milliseconds(
                  static_cast<int64_t>(cfg.round_deadline_s * 1000));
  // A secure session's sum is one update, weighted already.
  AggregationConfig agg = cfg.aggregation;
  if (secure_) agg.rule = "uniform", agg.weight_by_samples = false;
  auto round_state = std::make_shared<RoundState>(
      round, plan, versions, state_->store->dim(), agg, cfg.model.num_models,
      deadline);

  // 2. Open the round and push the tasks.
  auto tasks = MakeTasks(plan, round);
  state_->Open(round_state, tasks);
  PushTasks(tasks);
  if (secure_) OpenSecure(plan, round, deadline);
  LogRoundOpen(plan, round);
  int64_t expected_uploads = 0;
  for (const ClientTask& ct : plan.tasks)
    expected_uploads += static_cast<int64_t>(ct.models.size());
  state_->metrics.OpenRound(expected_uploads);
  const double own = Since(start);

  // 3-4. Wait for the uploads (the handlers validate and buffer them).
  const auto wait_start = Clock::now();
  bool complete =
      secure_ ? WaitForSecure(*round_state) : WaitForUploads(*round_state);
  const double waited = Since(wait_start);
  const auto close_start = Clock::now();
  const nlohmann::json secure_line =
      secure_ ? CloseSecure(*round_state) : nlohmann::json();
  if (secure_) complete = complete && round_state->Complete();
  const std::vector<ModelSnapshot> before =
      secure_ ? state_->store->Snapshot().first : std::vector<ModelSnapshot>();

  // 5. Close: from here on an update is late. Aggregate in client order.
  std::vector<ModelAggregator>& aggregators = round_state->Close();
  if (!complete && state_->stop) {
    LogLine("coordinator", absl::StrCat("round ", round, " abandoned: stopping"));
    state_->Finish(round - 1);
    return WaitForRecord();
  }
  if (!complete)
    LogLine("coordinator",
            absl::StrCat("round ", round, " deadline: ",
                         round_state->accepted(), "/", round_state->expected(),
                         " updates in"));
  const nlohmann::json stallers = RecordStallers(*round_state, round, !complete);
  auto closed = kind_->Close(aggregators);
  if (!closed.ok()) return closed.status();
  if (secure_) AccumulateSecure(before);

  // The rest (evaluation, the line, the checkpoint) runs beside the next
  // round's training, from snapshots of what this round published. It
  // lags by at most one round: before this round's record starts, the
  // previous one is done, so a resumed run goes back at most one round
  // past a round it has handed out (client/residual_book.h keeps what
  // that needs). The previous record's wait (evaluation outlasting a
  // round) is part of this round's wall time, not of the coordinator's.
  const auto record_wait_start = Clock::now();
  if (auto st = WaitForRecord(); !st.ok()) return st;
  const double record_wait = Since(record_wait_start);
  PendingRecord rec;
  rec.round = round;
  rec.closed = std::move(*closed);
  rec.evaluate = round % cfg.eval.every == 0 || round == cfg.rounds;
  rec.wall = Since(start);
  rec.own = own + Since(close_start) - record_wait;
  rec.line = PendingLine(*round_state, plan, rec, waited, record_wait,
                         stallers, missing);
  if (secure_) {
    rec.line["secure"] = secure_line;
    rec.line["secure_bytes"] = state_->secure_bytes.Round(round);
  }
  const DownloadBook::Bytes dl = state_->downloads.Round(round);
  rec.summary = absl::StrFormat(
      "up %.2f MB  down %.2f MB (%.2f MB on the wire)  %d accepted %d "
      "rejected %d late  %.1f s (own %.2f s)",
      rec.line["bytes_up"].get<double>() / 1e6,
      rec.line["bytes_down"].get<double>() / 1e6, dl.physical_down / 1e6,
      round_state->accepted(), round_state->rejected(), round_state->late(),
      rec.wall, rec.own);
  pending_record_ = std::async(std::launch::async, [this, r = std::move(rec)] {
    return Record(r);
  });
  state_->Finish(round);
  v1::FeedMessage end;
  end.mutable_round_end()->set_round(round);
  for (const auto& session : state_->registry.Sessions()) session->feed.Push(end);
  return absl::OkStatus();
}

nlohmann::json Coordinator::PendingLine(const RoundState& rs,
                                        const RoundPlan& plan,
                                        const PendingRecord& rec, double waited,
                                        double record_wait,
                                        const nlohmann::json& stallers,
                                        const ClientRegistry::Missing& missing) const {
  nlohmann::json line = RoundLine(rs, rec.wall, rec.own);
  // Who was missing as the round opened, and whose tasks it stopped
  // waiting for (server/state/lost_daemons.h).
  line["clients_missing"] = missing.clients();
  nlohmann::json daemons = nlohmann::json::array();
  for (const ClientRegistry::MissingDaemon& d : missing.daemons)
    daemons.push_back(d.name);
  line["daemons_missing"] = std::move(daemons);
  line["clients_abandoned"] = rs.abandoned_clients();
  capacity_->AddFields(plan, &line, state_->metrics);
  line["wait_seconds"] = waited;
  line["record_wait_seconds"] = record_wait;
  for (const auto& [key, value] : rec.closed.fields.items()) line[key] = value;
  line["stallers"] = stallers;
  const DownloadBook::Bytes dl = state_->downloads.Round(rec.round);
  line["download_bytes_logical"] = dl.logical();
  line["download_bytes_physical"] = dl.physical();
  line["downloads"] = {
      {"logical", {{"up", dl.logical_up}, {"down", dl.logical_down}}},
      {"physical", {{"up", dl.physical_up}, {"down", dl.physical_down}}}};
  return line;
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
    auto eval = rec.closed.evaluate(&line);
    if (!eval.ok()) return eval.status();
    RecordEvaluation(*eval, rec.round);
  }
  AddEvaluation(&line, rec.evaluate);
  line["eval_seconds"] = Since(eval_start);
  if (auto st = results_->AppendRound(line); !st.ok()) return st;
  Failpoint("rounds.after_append");
  // The optimiser's state first, under its round: a crash before the
  // checkpoint's rename leaves the previous round's state beside it.
  const auto& optimizer = rec.closed.optimizer;
  if (optimizer) {
    if (auto st = optimizer->Save(
            results_->server_optimizer_path(rec.round), rec.round);
        !st.ok())
      return st;
  }
  if (auto st = ModelStore::SaveCheckpoint(results_->checkpoint_path(),
                                           rec.round, rec.closed.models,
                                           rec.closed.versions);
      !st.ok())
    return st;
  if (optimizer && rec.round > 1)
    std::remove(results_->server_optimizer_path(rec.round - 1).c_str());
  if (auto st = SaveOwnership(results_->ownership_path(),
                              state_->registry.GetOwnership());
      !st.ok())
    return st;
  state_->metrics.SetRound(rec.round);
  state_->metrics.ObserveRoundSeconds(rec.wall);
  LogLine("coordinator",
          absl::StrFormat("round %d/%d  acc %.4f  loss %.4f  %s", rec.round,
                          cfg.rounds, last_eval_.ensemble_accuracy,
                          last_eval_.ensemble_nll, rec.summary));
  return absl::OkStatus();
}

// The round's evaluation, when it had one (`now`). A round in between
// (eval.every > 1) measured nothing, so nothing may read an accuracy off
// it: the fields every line holds (DESIGN.md's results contract) are null
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

// Which clients hold this round's tasks: what a person (or a test) needs
// to tell a lost update from a slow one.
void Coordinator::LogRoundOpen(const RoundPlan& plan, int64_t round) const {
  std::vector<int64_t> clients;
  for (const ClientTask& ct : plan.tasks) clients.push_back(ct.client_id);
  std::string need;
  if (plan.needed > 0 && plan.needed < static_cast<int64_t>(clients.size()))
    need = absl::StrCat(", the first ", plan.needed, " close it");
  LogLine("coordinator", absl::StrCat("round ", round, " open: clients ",
                                      ClientList(clients), need));
}

std::map<int64_t, v1::FeedMessage> Coordinator::MakeTasks(
    const RoundPlan& plan, int64_t round) const {
  const ExperimentConfig& cfg = state_->config;
  const double lr = RoundLearningRate(cfg.train, round - 1);
  const auto deadline_ms = static_cast<uint64_t>(cfg.round_deadline_s * 1000);
  std::map<int64_t, v1::FeedMessage> tasks;
  for (const ClientTask& ct : plan.tasks) {
    v1::FeedMessage msg;
    v1::Task* task = msg.mutable_task();
    task->set_round(round);
    task->set_client_id(ct.client_id);
    task->set_deadline_in_ms(deadline_ms);
    for (size_t i = 0; i < ct.models.size(); ++i) {
      v1::ModelTask* mt = task->add_models();
      mt->set_model_id(ct.models[i]);
      mt->set_model_version(state_->store->Version(ct.models[i]));
      mt->set_k(ct.k[i]);
    }
    v1::LocalTrainSettings* s = task->mutable_train();
    s->set_lr(lr);
    const bool hpc = ct.tier == Tier::kHpc && cfg.train.hpc_local_epochs > 0;
    s->set_local_epochs(hpc ? cfg.train.hpc_local_epochs : cfg.train.local_epochs);
    s->set_local_steps(cfg.train.local_steps);
    s->set_batch_size(cfg.train.batch_size);
    s->set_prox_mu(cfg.train.prox_mu);
    tasks[ct.client_id] = std::move(msg);
  }
  return tasks;
}

nlohmann::json Coordinator::RecordStallers(const RoundState& rs, int64_t round,
                                           bool deadline) {
  const std::vector<int64_t> silent = rs.silent_clients();
  const std::vector<int64_t> benched =
      stallers_->Record(round, silent, rs.heard_clients(), deadline);
  if (!benched.empty())
    LogLine("coordinator",
            absl::StrCat("clients ", absl::StrJoin(benched, ","), " sent nothing in ",
                         state_->config.clients.staller_strikes,
                         " rounds in a row: they sit out the next ",
                         state_->config.clients.staller_rounds_out));
  const int64_t sitting_out = stallers_->BenchedCount(round + 1);
  state_->metrics.SetStallers(stallers_->strikes_total(), sitting_out);
  return {{"silent", deadline ? static_cast<int64_t>(silent.size()) : 0},
          {"benched", benched},
          {"sitting_out", sitting_out}};
}

void Coordinator::PushTasks(const std::map<int64_t, v1::FeedMessage>& tasks) {
  for (const auto& [client, task] : tasks) {
    auto owner = state_->registry.OwnerOf(client);
    if (owner == nullptr) {
      LogLine("coordinator",
              absl::StrCat("client ", client, " has no daemon: task dropped"));
      continue;
    }
    owner->feed.Push(task);
  }
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
