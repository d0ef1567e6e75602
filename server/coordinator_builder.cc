#include "server/coordinator_builder.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"
#include "common/fed/methods/registry.h"
#include "common/learn/device.h"
#include "common/learn_stacked/stacked_eval.h"
#include "common/net/tls.h"
#include "server/run/ownership_file.h"
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
  SHEFL_RETURN_IF_ERROR(kind.CheckCheckpoint(store.num_models()));
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
  return CoordinatorBuilder(options).Build();
}

CoordinatorBuilder::CoordinatorBuilder(const CoordinatorOptions& options)
    : o_(options), c_(new Coordinator()) {}

absl::StatusOr<std::unique_ptr<Coordinator>> CoordinatorBuilder::Build() {
  SHEFL_RETURN_IF_ERROR(ChooseStart(&o_));
  SHEFL_RETURN_IF_ERROR(ReadSecurity());
  SHEFL_RETURN_IF_ERROR(ResolveConfig());
  ConfigureThreads(o_.threads);
  SHEFL_RETURN_IF_ERROR(OpenParts());
  SHEFL_ASSIGN_OR_RETURN(std::unique_ptr<ModelStore> store, LoadModels());
  SHEFL_RETURN_IF_ERROR(MakeRoundParts(std::move(store)));
  if (!c_->state_->tokens.required() && o_.tls.ca_file.empty())
    LogLine("coordinator",
            "WARNING: no --token-file and no --tls-client-ca: any peer that "
            "reaches the port can register as a daemon");
  SHEFL_RETURN_IF_ERROR(WriteConfig());
  SHEFL_RETURN_IF_ERROR(c_->StartServers(o_, creds_));
  return std::move(c_);
}

absl::Status CoordinatorBuilder::ReadSecurity() {
  SHEFL_ASSIGN_OR_RETURN(creds_, MakeServerCredentials(o_.tls));
  SHEFL_ASSIGN_OR_RETURN(tokens_, TokenBook::Read(o_.tls.token_file));
  return absl::OkStatus();
}

absl::Status CoordinatorBuilder::ResolveConfig() {
  resume_ = !o_.resume_dir.empty();
  SHEFL_ASSIGN_OR_RETURN(
      config_, LoadConfig(resume_ ? o_.resume_dir + "/config.yaml"
                                  : o_.config_path,
                          o_.overrides));
  if (!o_.out_dir.empty()) config_.out_dir = o_.out_dir;
  // A buffered run's tasks in flight and half-full buffers are not in its
  // checkpoint (docs/DESIGN.md, "Buffered asynchronous rounds").
  if (resume_ && config_.round.mode == "buffered")
    return absl::FailedPreconditionError(absl::StrCat(
        "--resume ", o_.resume_dir, ": round.mode buffered runs cannot be "
        "resumed yet (their tasks in flight and buffers are not "
        "checkpointed); start a new run"));
  if (resume_) config_.out_dir = o_.resume_dir;
  if (config_.out_dir.empty()) config_.out_dir = DefaultOutDir(config_);
  return absl::OkStatus();
}

absl::Status CoordinatorBuilder::OpenParts() {
  SHEFL_ASSIGN_OR_RETURN(RunResults results, RunResults::Open(config_.out_dir));
  c_->results_ = std::make_unique<RunResults>(std::move(results));
  // The members evaluate as one stacked forward on CUDA (StackedEval):
  // learn's evaluation takes the stacked path only when handed it.
  SHEFL_ASSIGN_OR_RETURN(
      c_->evaluator_,
      Evaluator::Create(config_, EvalThreads{o_.eval_threads, o_.eval_nice,
                                             &c_->record_waited_,
                                             StackedEval()}));
  SHEFL_ASSIGN_OR_RETURN(c_->kind_, MakeRoundKind(config_));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ModelStore>> CoordinatorBuilder::LoadModels() {
  have_checkpoint_ = std::filesystem::exists(c_->results_->checkpoint_path());
  std::unique_ptr<ModelStore> store;
  if (resume_ && have_checkpoint_) {
    SHEFL_ASSIGN_OR_RETURN(store, Resume());
  } else {
    if (resume_) {
      LogLine("coordinator", "no checkpoint yet: the run starts over at round 1");
      SHEFL_RETURN_IF_ERROR(c_->results_->TruncateRounds(0));
    }
    SHEFL_ASSIGN_OR_RETURN(std::vector<std::vector<float>> init,
                           c_->evaluator_->InitialModels());
    store = std::make_unique<ModelStore>(std::move(init));
  }
  if (static_cast<int64_t>(store->dim()) != c_->evaluator_->dim())
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint models have ", store->dim(), " weights, model '",
        config_.model.name, "' has ", c_->evaluator_->dim()));
  return store;
}

absl::StatusOr<std::unique_ptr<ModelStore>> CoordinatorBuilder::Resume() {
  SHEFL_ASSIGN_OR_RETURN(
      auto ck, ModelStore::LoadCheckpoint(c_->results_->checkpoint_path()));
  // Refused before anything of the run is rewritten (rounds.jsonl,
  // config.yaml): the run stays as it was.
  SHEFL_RETURN_IF_ERROR(
      CheckResumable(*ck.first, *c_->kind_, config_, c_->evaluator_->dim()));
  auto owners = LoadOwnership(c_->results_->ownership_path());
  if (owners.ok()) ownership_ = std::move(*owners);
  else if (!absl::IsNotFound(owners.status())) return owners.status();
  Coordinator& c = *c_;
  c.first_round_ = ck.second;
  SHEFL_RETURN_IF_ERROR(c.results_->TruncateRounds(ck.second));
  const RunHistory h = ReadRunHistory(config_.out_dir, config_.eval.threshold);
  c.best_accuracy_ = h.best_accuracy;
  c.rounds_to_threshold_ = h.rounds_to_threshold;
  c.prior_wall_seconds_ = h.wall_seconds;
  c.last_eval_ = h.last_eval;
  c.evaluated_ = h.evaluated;
  c.last_eval_round_ = h.last_eval_round;
  c.prior_bytes_ = h.bytes;
  LogLine("coordinator", absl::StrCat("resuming ", config_.out_dir,
                                      " after round ", ck.second));
  return std::move(ck.first);
}

absl::Status CoordinatorBuilder::MakeRoundParts(
    std::unique_ptr<ModelStore> store) {
  Coordinator& c = *c_;
  const int64_t dim = c.evaluator_->dim();
  SHEFL_ASSIGN_OR_RETURN(Scheduler scheduler, Scheduler::Create(config_, dim));
  c.scheduler_ = std::make_unique<Scheduler>(std::move(scheduler));
  c.stallers_ = std::make_unique<StallerBook>(
      config_.clients.staller_strikes, config_.clients.staller_rounds_out);
  c.lost_ = std::make_unique<LostDaemons>(config_.clients.lost_after_s);
  LogLine("coordinator",
          absl::StrCat("top-k budget of d = ", dim, ": k = ",
                       c.scheduler_->k_lpc(),
                       MethodHasTiers(config_.method)
                           ? absl::StrCat(" (LPC), ", c.scheduler_->k_hpc(),
                                          " per model (HPC)")
                           : std::string(" per client"),
                       config_.compression.budget_bytes > 0
                           ? absl::StrCat(", from budget_bytes ",
                                          config_.compression.budget_bytes)
                           : absl::StrCat(", from density ",
                                          config_.compression.density)));
  MakeState(std::move(store));
  c.capacity_ = std::make_unique<CapacityPlan>(c.state_->config,
                                               c.state_->reports);
  SHEFL_ASSIGN_OR_RETURN(c.source_,
                         MakeUpdateSource(c.state_.get(), c.lost_.get()));
  if (resume_ && have_checkpoint_) SHEFL_RETURN_IF_ERROR(LoadSourceState());
  return c.kind_->Bind({c.state_.get(), c.evaluator_.get(),
                        c.scheduler_.get(), c.capacity_.get(),
                        c.results_.get(), c.first_round_});
}

// The update source's state beside the checkpoint (the secure support's
// accumulators, the blame book). A run checkpointed before the source kept
// any has none: it starts empty, and says so.
absl::Status CoordinatorBuilder::LoadSourceState() {
  Coordinator& c = *c_;
  const std::string path = c.results_->source_state_path(c.first_round_);
  if (!std::filesystem::exists(path)) {
    SHEFL_RETURN_IF_ERROR(c.source_->StateMissing(c.first_round_));
    if (!c.source_->SaveState(c.first_round_).empty())
      LogLine("coordinator", absl::StrCat("no update source state at '", path,
                                          "': it starts again from empty"));
    return absl::OkStatus();
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in)
    return absl::DataLossError(absl::StrCat("cannot read '", path, "'"));
  return c.source_->LoadState(bytes.str(), c.first_round_);
}

void CoordinatorBuilder::MakeState(std::unique_ptr<ModelStore> store) {
  Coordinator& c = *c_;
  c.state_ = std::make_unique<CoordinatorState>(config_, std::move(store));
  c.state_->tokens = std::move(tokens_);
  for (const FlatEntry& e : c.evaluator_->layout()) {
    v1::TensorLayout t;
    t.set_name(e.name);
    for (int64_t s : e.shape) t.add_shape(s);
    t.set_buffer(e.is_buffer);
    c.state_->model_layout.push_back(std::move(t));
  }
  CoordinatorMetrics& metrics = c.state_->metrics;
  // round.mode buffered: shefl_round counts applications, M a round.
  metrics.SetRoundsPlanned(config_.round.mode == "buffered"
                               ? config_.rounds * config_.model.num_models
                               : config_.rounds);
  metrics.SetClientsExpected(config_.clients.num_clients,
                             ClientQuorum(config_.clients));
  // Every model's buffer has a series from the start (0 when synchronous).
  for (int64_t m = 0; m < config_.model.num_models; ++m)
    metrics.SetBufferFill(m, 0);
  if (resume_ && have_checkpoint_)  // before /metrics serves: no 0 scraped
    metrics.RestoreFromRounds(c.results_->dir() + "/rounds.jsonl");
  if (ownership_) c.state_->registry.RestoreOwnership(std::move(*ownership_));
}

// With --set, a resume rewrites it (the daemons get the same text at
// registration).
absl::Status CoordinatorBuilder::WriteConfig() {
  if (resume_ && o_.overrides.empty()) return absl::OkStatus();
  SHEFL_RETURN_IF_ERROR(c_->results_->WriteConfig(c_->state_->config_yaml));
  if (resume_)
    LogLine("coordinator", absl::StrCat("config.yaml rewritten with ",
                                        o_.overrides.size(),
                                        " --set override(s) for the resume"));
  return absl::OkStatus();
}

}  // namespace shefl
