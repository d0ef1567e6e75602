// Coordinator start and end: config, results folder, initial models or a
// checkpoint to resume from, the gRPC and metrics servers; the per-round
// record and the summary; telling the daemons the run is over.
#include <grpcpp/health_check_service_interface.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/core/fd_reserve.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/fed/config_load.h"
#include "common/fed/methods/registry.h"
#include "common/learn/device.h"
#include "common/net/keepalive.h"
#include "common/net/metrics_server.h"
#include "common/net/run_label.h"
#include "server/coordinator.h"
#include "server/run/ownership_file.h"
#include "server/run/rounds_log.h"
#include "server/run/run_folder.h"
#include "server/run_history.h"
#include "server/state/staller_book.h"

namespace shefl {

namespace {

std::string DefaultOutDir(const ExperimentConfig& cfg) {
  std::time_t now = std::time(nullptr);
  std::tm tm;
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  return absl::StrCat("results/", cfg.name, "-", stamp);
}

// A checkpoint the config in force can continue: as many models as the
// kind of round keeps, of as many weights as the model has.
absl::Status CheckResumable(const ModelStore& store, const RoundKind& kind,
                            const ExperimentConfig& config, int64_t dim) {
  if (auto st = kind.CheckCheckpoint(store.num_models()); !st.ok()) return st;
  if (static_cast<int64_t>(store.dim()) != dim)
    return absl::FailedPreconditionError(absl::StrCat(
        "--resume: the checkpoint's models have ", store.dim(),
        " weights, model '", config.model.name, "' has ", dim,
        "; a run cannot change its model (start a new run with --out)"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Coordinator>> Coordinator::Create(
    const CoordinatorOptions& options) {
  auto c = std::unique_ptr<Coordinator>(new Coordinator());
  CoordinatorOptions o = options;
  if (auto st = ChooseStart(&o); !st.ok()) return st;
  // Security flags fail before any data loads.
  auto creds = MakeServerCredentials(o.tls);
  if (!creds.ok()) return creds.status();
  auto tokens = TokenBook::Read(o.tls.token_file);
  if (!tokens.ok()) return tokens.status();
  const bool resume = !o.resume_dir.empty();
  auto config = resume ? LoadConfig(o.resume_dir + "/config.yaml", o.overrides)
                       : LoadConfig(o.config_path, o.overrides);
  if (!config.ok()) return config.status();
  if (!o.out_dir.empty()) config->out_dir = o.out_dir;
  if (resume) config->out_dir = o.resume_dir;
  if (config->out_dir.empty()) config->out_dir = DefaultOutDir(*config);
  ConfigureThreads(o.threads);

  auto results = RunResults::Open(config->out_dir);
  if (!results.ok()) return results.status();
  c->results_ = std::make_unique<RunResults>(std::move(*results));
  auto evaluator =
      Evaluator::Create(*config, EvalThreads{o.eval_threads, o.eval_nice,
                                             &c->record_waited_});
  if (!evaluator.ok()) return evaluator.status();
  c->evaluator_ = std::move(*evaluator);
  auto kind = MakeRoundKind(*config);
  if (!kind.ok()) return kind.status();
  c->kind_ = std::move(*kind);

  std::unique_ptr<ModelStore> store;
  std::optional<ClientRegistry::Ownership> ownership;  // a resumed run's
  const bool have_checkpoint =
      std::filesystem::exists(c->results_->checkpoint_path());
  if (resume && !have_checkpoint) {
    LogLine("coordinator", "no checkpoint yet: the run starts over at round 1");
    if (auto st = c->results_->TruncateRounds(0); !st.ok()) return st;
  }
  if (resume && have_checkpoint) {
    auto ck = ModelStore::LoadCheckpoint(c->results_->checkpoint_path());
    if (!ck.ok()) return ck.status();
    // Refused before anything of the run is rewritten (rounds.jsonl,
    // config.yaml): the run stays as it was.
    if (auto st = CheckResumable(*ck->first, *c->kind_, *config,
                                 c->evaluator_->dim());
        !st.ok())
      return st;
    auto owners = LoadOwnership(c->results_->ownership_path());
    if (owners.ok()) ownership = std::move(*owners);
    else if (!absl::IsNotFound(owners.status())) return owners.status();
    store = std::move(ck->first);
    c->first_round_ = ck->second;
    if (auto st = c->results_->TruncateRounds(ck->second); !st.ok()) return st;
    const RunHistory h =
        ReadRunHistory(config->out_dir, config->eval.threshold);
    c->best_accuracy_ = h.best_accuracy;
    c->rounds_to_threshold_ = h.rounds_to_threshold;
    c->prior_wall_seconds_ = h.wall_seconds;
    c->last_eval_ = h.last_eval;
    c->evaluated_ = h.evaluated;
    c->last_eval_round_ = h.last_eval_round;
    c->prior_bytes_ = h.bytes;
    LogLine("coordinator", absl::StrCat("resuming ", config->out_dir,
                                        " after round ", ck->second));
  } else {
    auto init = c->evaluator_->InitialModels();
    if (!init.ok()) return init.status();
    store = std::make_unique<ModelStore>(std::move(*init));
  }
  if (static_cast<int64_t>(store->dim()) != c->evaluator_->dim())
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint models have ", store->dim(), " weights, model '",
        config->model.name, "' has ", c->evaluator_->dim()));
  auto scheduler = Scheduler::Create(*config, c->evaluator_->dim());
  if (!scheduler.ok()) return scheduler.status();
  c->scheduler_ = std::make_unique<Scheduler>(std::move(*scheduler));
  c->stallers_ = std::make_unique<StallerBook>(
      config->clients.staller_strikes, config->clients.staller_rounds_out);
  c->lost_ = std::make_unique<LostDaemons>(config->clients.lost_after_s);
  LogLine("coordinator",
          absl::StrCat("top-k budget of d = ", c->evaluator_->dim(), ": k = ",
                       c->scheduler_->k_lpc(),
                       MethodHasTiers(config->method)
                           ? absl::StrCat(" (LPC), ", c->scheduler_->k_hpc(),
                                          " per model (HPC)")
                           : std::string(" per client"),
                       config->compression.budget_bytes > 0
                           ? absl::StrCat(", from budget_bytes ",
                                          config->compression.budget_bytes)
                           : absl::StrCat(", from density ",
                                          config->compression.density)));
  c->state_ = std::make_unique<CoordinatorState>(*config, std::move(store));
  c->state_->tokens = std::move(*tokens);
  for (const FlatEntry& e : c->evaluator_->layout()) {
    v1::TensorLayout t;
    t.set_name(e.name);
    for (int64_t s : e.shape) t.add_shape(s);
    t.set_buffer(e.is_buffer);
    c->state_->model_layout.push_back(std::move(t));
  }
  c->state_->metrics.SetRoundsPlanned(config->rounds);
  c->state_->metrics.SetClientsExpected(config->clients.num_clients,
                                        ClientQuorum(config->clients));
  if (resume && have_checkpoint)  // before /metrics serves: no 0 is scraped
    c->state_->metrics.RestoreFromRounds(c->results_->dir() + "/rounds.jsonl");
  if (ownership) c->state_->registry.RestoreOwnership(std::move(*ownership));
  c->capacity_ = std::make_unique<CapacityPlan>(c->state_->config,
                                                c->state_->registry);
  if (c->state_->config.aggregation.secure != "off") {
    c->secure_ = std::make_unique<SecurePlanner>(
        c->state_->config, c->state_->store->dim(),
        RunIdOfFolder(c->state_->config.out_dir));
    if (resume && have_checkpoint)
      LogLine("coordinator",
              "aggregation.secure: the support's accumulator is not in the "
              "checkpoint; it starts again from zero");
  }
  if (auto st = c->kind_->Bind({c->state_.get(), c->evaluator_.get(),
                                c->scheduler_.get(), c->capacity_.get(),
                                c->results_.get(), c->first_round_});
      !st.ok())
    return st;
  if (!c->state_->tokens.required() && o.tls.ca_file.empty())
    LogLine("coordinator",
            "WARNING: no --token-file and no --tls-client-ca: any peer that "
            "reaches the port can register as a daemon");
  // config.yaml is the run's record of what is in force: a resume with
  // --set rewrites it (the daemons get the same text at registration).
  if (!resume || !o.overrides.empty()) {
    if (auto st = c->results_->WriteConfig(c->state_->config_yaml); !st.ok())
      return st;
    if (resume)
      LogLine("coordinator", absl::StrCat("config.yaml rewritten with ",
                                          o.overrides.size(),
                                          " --set override(s) for the resume"));
  }
  if (auto st = c->StartServers(o, *creds); !st.ok()) return st;
  return c;
}

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
  auto exposer = MetricsServer::Start(o.metrics_listen, state_->metrics.registry());
  if (!exposer.ok()) return exposer.status();
  exposer_ = std::move(*exposer);
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
    auto health = HealthPort::Start(o.health_listen, [state] { return !state->stop; });
    if (!health.ok()) return health.status();
    health_port_ = std::move(*health);
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

absl::Status Coordinator::Finish(double wall) {
  const ExperimentConfig& cfg = state_->config;
  // A resumed run's totals: the rounds recorded before it, then all of
  // this process's traffic.
  const std::string rounds = results_->dir() + "/rounds.jsonl";
  // The last round done: this process's, or the checkpoint's where it ran
  // none (a resumed run that was over already keeps its count).
  const int64_t done = std::max(state_->current_round(), first_round_);
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
