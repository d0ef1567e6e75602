// The round state machine. One round, as docs/DESIGN.md tells it:
//   1. sample the cohort, assign models by the permutation, compute k;
//   2. push a task to each sampled client;
//   3-4. the gRPC handlers serve downloads and take uploads meanwhile, and
//      the update source (server/source/) hands the updates in;
//   5. when every update is in or the deadline passes: close the round,
//      aggregate, publish, and record (evaluate, the line, the checkpoint:
//      coordinator_record.cc) beside the next round.
#include "server/coordinator.h"

#include <chrono>
#include <future>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/core/status_macros.h"
#include "common/fed/lr_schedule.h"
#include "server/buffered_loop.h"
#include "server/run/waiting_line.h"

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
  if (state_->config.round.mode == "buffered" && !state_->stop) {
    if (absl::Status st = BufferedLoop(this).Run(); !st.ok()) {
      WaitForRecord().IgnoreError();
      LogLine("coordinator", absl::StrCat("buffered run failed: ", st.message()));
      return st;
    }
  }
  for (int64_t t = first_round_;
       state_->config.round.mode != "buffered" && t < state_->config.rounds;
       ++t) {
    if (t > first_round_)
      if (absl::Status st = WaitForDaemons(t + 1); !st.ok()) return GiveUp(st);
    if (state_->stop) break;
    if (const std::string why = source_->StopBefore(t + 1); !why.empty()) {
      LogLine("coordinator", why);
      break;
    }
    if (absl::Status st = RunRound(t); !st.ok()) {
      WaitForRecord().IgnoreError();
      LogLine("coordinator", absl::StrCat("round ", t + 1, " failed: ",
                                          st.message()));
      return st;
    }
  }
  // The last round's evaluation, line and checkpoint.
  SHEFL_RETURN_IF_ERROR(WaitForRecord());
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
  // 1. Sample the cohort, assign the models, compute the budgets.
  RoundRun r = PlanRound(t);
  // 2. Open the round: its books, its tasks pushed, its source opened.
  OpenRound(r);
  // 3-4. The handlers serve downloads; the source hands in the updates.
  const auto wait_start = Clock::now();
  r.complete = source_->Gather(*r.books);
  r.waited = Since(wait_start);
  // 5. Close: aggregate in client order, publish, and record beside the
  // next round's training.
  const auto close_start = Clock::now();
  SHEFL_ASSIGN_OR_RETURN(auto closed, CloseRound(r));
  if (!closed) return WaitForRecord();  // abandoned on a stop
  return StartRecord(r, close_start);
}

Coordinator::RoundRun Coordinator::PlanRound(int64_t t) {
  const ExperimentConfig& cfg = state_->config;
  RoundRun r;
  r.round = t + 1;
  r.start = Clock::now();
  // Only clients whose daemon is connected now: a lost daemon's clients
  // would only cost the round its deadline.
  // Stallers sitting out (server/state/staller_book.h) are left out too,
  // as are the clients the source benches (a daemon blamed for corrupt
  // secure sums). With every client connected and none sitting out there
  // is no filter: the draw is the same, and costs O(C) instead of O(N).
  const int64_t round = r.round;
  Availability connected = [this, round](int64_t id) {
    return state_->registry.IsConnected(id) && !stallers_->Benched(id, round) &&
           !source_->Excludes(id, round);
  };
  if (state_->registry.AllConnected() && stallers_->BenchedCount(round) == 0 &&
      source_->ExcludedCount(round) == 0)
    connected = nullptr;
  r.missing = state_->registry.MissingNow();
  r.plan = kind_->Plan(t, connected);
  std::vector<uint64_t> versions;
  for (int64_t m = 0; m < cfg.model.num_models; ++m)
    versions.push_back(state_->store->Version(m));
  r.deadline = r.start + std::chrono::milliseconds(static_cast<int64_t>(
                             cfg.round_deadline_s * 1000));
  r.books = std::make_shared<RoundState>(
      round, r.plan, versions, state_->store->dim(),
      source_->Aggregation(cfg.aggregation), cfg.model.num_models, r.deadline);
  return r;
}

void Coordinator::OpenRound(RoundRun& r) {
  auto tasks = MakeTasks(r.plan, r.round);
  state_->Open(r.books, tasks);
  PushTasks(tasks);
  source_->Open(r.plan, r.round, r.deadline);
  LogRoundOpen(r.plan, r.round);
  int64_t expected_uploads = 0;
  for (const ClientTask& ct : r.plan.tasks)
    expected_uploads += static_cast<int64_t>(ct.models.size());
  state_->metrics.OpenRound(expected_uploads);
  r.own = Since(r.start);
}

// From here on an update is late. False when the round is abandoned on a
// stop (nothing published; the run resumes from the round before).
absl::StatusOr<bool> Coordinator::CloseRound(RoundRun& r) {
  std::vector<ModelAggregator>& aggregators = r.books->Close();
  if (!r.complete && state_->stop) {
    LogLine("coordinator", absl::StrCat("round ", r.round, " abandoned: stopping"));
    state_->Finish(r.round - 1);
    return false;
  }
  if (!r.complete)
    LogLine("coordinator",
            absl::StrCat("round ", r.round, " deadline: ", r.books->accepted(),
                         "/", r.books->expected(), " updates in"));
  r.stallers = RecordStallers(*r.books, r.round, !r.complete);
  source_->BeforePublish(aggregators);
  SHEFL_ASSIGN_OR_RETURN(auto closed, kind_->Close(aggregators));
  source_->Published();
  r.closed = std::move(closed);
  return true;
}

// The rest (evaluation, the line, the checkpoint) runs beside the next
// round's training, from snapshots of what this round published. It lags
// by at most one round: before this round's record starts, the previous
// one is done, so a resumed run goes back at most one round past a round
// it has handed out (client/residual_book.h keeps what that needs). The
// previous record's wait (evaluation outlasting a round) is part of this
// round's wall time, not of the coordinator's.
absl::Status Coordinator::StartRecord(RoundRun& r,
                                      Clock::time_point close_start) {
  const auto record_wait_start = Clock::now();
  SHEFL_RETURN_IF_ERROR(WaitForRecord());
  const double record_wait = Since(record_wait_start);
  PendingRecord rec;
  rec.round = r.round;
  rec.closed = std::move(r.closed);
  // The last round is evaluated, whether the config's or the one before
  // privacy.target_epsilon stops the run.
  rec.evaluate = r.round % state_->config.eval.every == 0 ||
                 r.round == state_->config.rounds ||
                 !source_->StopBefore(r.round + 1).empty();
  rec.wall = Since(r.start);
  rec.own = r.own + Since(close_start) - record_wait;
  rec.line = PendingLine(r, rec, record_wait);
  source_->AddFields(r.round, &rec.line);
  rec.source_state = source_->SaveState(r.round);
  rec.summary = RecordSummary(r, rec);
  pending_record_ = std::async(std::launch::async, [this, rr = std::move(rec)] {
    return Record(rr);
  });
  state_->Finish(r.round);
  v1::FeedMessage end;
  end.mutable_round_end()->set_round(r.round);
  for (const auto& session : state_->registry.Sessions()) session->feed.Push(end);
  return absl::OkStatus();
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

}  // namespace shefl
