#include "client/daemon.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/backoff.h"
#include "common/core/flags.h"
#include "common/learn/device.h"
#include "common/learn/precision.h"
#include "common/net/keepalive.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/net/metrics_server.h"
#include "common/net/wire.h"
#include "common/fed/config_load.h"
#include "common/fed/methods/registry.h"
#include "common/core/mutex.h"

namespace shefl {

absl::StatusOr<std::vector<int64_t>> ParseClientRanges(const std::string& s) {
  return ParseIdRanges("--clients", s);
}

Daemon::Daemon(DaemonOptions o) : o_(std::move(o)) {}

Daemon::~Daemon() {
  stop_ = true;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions o) {
  if (o.coordinator.empty())
    return absl::InvalidArgumentError("--coordinator HOST:PORT is required");
  if (o.clients.empty() && o.auto_clients == 0)
    return absl::InvalidArgumentError("--clients is required (e.g. 0-24 or auto:10)");
  if (o.name.empty() && o.auto_clients > 0) {
    // Scaled containers each have their own host name, and keep it across
    // a restart: the coordinator gives the name its clients back.
    char host[256] = {};
    if (::gethostname(host, sizeof(host) - 1) == 0 && host[0] != '\0') o.name = host;
  }
  if (o.name.empty()) o.name = absl::StrCat("shefl-client-", ::getpid());
  // One folder for the daemons that share OUT: residual files are named by
  // client, so a client hosted by another daemon after a restart finds its own.
  if (o.state_dir.empty()) o.state_dir = o.out_dir + "/state";
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("--out '", o.out_dir, "': ", ec.message()));
  std::filesystem::create_directories(o.state_dir, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("--state-dir '", o.state_dir, "': ", ec.message()));
  // Resolve the device now: a bad --device fails at start, and the
  // coordinator's log shows the real one.
  auto device = ResolveDevice(o.device);
  if (!device.ok()) return device.status();
  o.device = device->str();
  std::optional<Adversary> adversary;
  if (!o.adversary.empty()) {
    auto a = Adversary::Parse(o.adversary);
    if (!a.ok()) return a.status();
    adversary = std::move(*a);
  }
  auto d = std::unique_ptr<Daemon>(new Daemon(std::move(o)));
  d->adversary_ = std::move(adversary);
  auto creds = MakeChannelCredentials(d->o_.tls, &d->channel_args_);
  if (!creds.ok()) return creds.status();
  d->creds_ = *creds;
  AddClientKeepalive(&d->channel_args_);
  auto token = ReadToken(d->o_.tls.token_file);
  if (!token.ok()) return token.status();
  d->token_ = *token;
  // Every task on task_threads intra-op threads, as many tasks as cores.
  if (d->o_.task_threads < 1)
    return absl::InvalidArgumentError("--task-threads must be >= 1");
  const int cores = d->o_.threads > 0 ? d->o_.threads : UsableCores();
  d->workers_ = std::max(1, cores / d->o_.task_threads);
  ConfigureThreads(d->o_.task_threads);
  d->registry_ = std::make_shared<prometheus::Registry>();
  d->train_histogram_ =
      &prometheus::BuildHistogram()
           .Name("shefl_client_train_seconds")
           .Help("Local training time of one (client, model) task")
           .Register(*d->registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{
                        0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300});
  d->bytes_ = &prometheus::BuildCounter()
                   .Name("shefl_client_bytes_total")
                   .Help("gRPC bytes (serialized + 5-byte header) by direction")
                   .Register(*d->registry_);
  d->download_bytes_ =
      &prometheus::BuildCounter()
           .Name("shefl_client_download_bytes_total")
           .Help("Model downloads: logical (what each client's own download "
                 "would cost) and physical (what crossed the wire; a version "
                 "is fetched once for all clients of the daemon)")
           .Register(*d->registry_);
  d->rss_ = &prometheus::BuildGauge()
                 .Name("shefl_client_resident_memory_bytes")
                 .Help("Resident memory of the daemon process")
                 .Register(*d->registry_)
                 .Add({});
  d->state_gauges_ = &prometheus::BuildGauge()
                         .Name("shefl_client_state")
                         .Help("1 for the daemon's state (disconnected, idle: "
                               "connected without a task, training), else 0")
                         .Register(*d->registry_);
  d->SetState(State::kDisconnected);
  // Dashboards and alerts name a daemon by its --name, not by its scrape
  // address: they join shefl_client_info{name} on instance.
  prometheus::BuildGauge()
      .Name("shefl_client_info")
      .Help("Always 1; the daemon's --name in the label `name`")
      .Register(*d->registry_)
      .Add({{"name", d->o_.name}})
      .Set(1);
  auto exposer = MetricsServer::Start(d->o_.metrics_listen, d->registry_);
  if (!exposer.ok()) return exposer.status();
  d->exposer_ = std::move(*exposer);
  if (d->exposer_) {
    // 200 with the state while connected; 503 while not, so a readiness
    // probe or compose healthcheck sees a daemon that cannot work.
    Daemon* self = d.get();
    d->exposer_->SetHandler("/healthz", [self]() -> absl::StatusOr<std::string> {
      const State s = self->state_;
      if (s == State::kDisconnected)
        return absl::UnavailableError("disconnected\n");
      return std::string(StateName(s)) + "\n";
    });
  }
  return d;
}

const char* Daemon::StateName(State s) {
  switch (s) {
    case State::kDisconnected: return "disconnected";
    case State::kIdle: return "idle";
    case State::kTraining: return "training";
  }
  return "unknown";
}

void Daemon::SetState(State s) {
  state_ = s;
  for (State each : {State::kDisconnected, State::kIdle, State::kTraining})
    state_gauges_->Add({{"state", StateName(each)}}).Set(each == s ? 1 : 0);
}

absl::Status Daemon::Run() {
  Backoff backoff(o_.initial_backoff_s, o_.max_backoff_s, std::random_device{}());
  while (!stop_) {
    auto channel =
        grpc::CreateCustomChannel(o_.coordinator, creds_, channel_args_);
    v1::Coordinator::Stub stub(channel);
    auto end = Session(stub);
    if (end.ok() && *end == SessionEnd::kShutdown) return absl::OkStatus();
    if (!end.ok() && !absl::IsUnavailable(end.status())) return end.status();
    if (end.ok()) backoff.Reset();  // a session ran: start over
    if (stop_) break;
    const double delay = backoff.NextDelay();
    LogLine(o_.name, absl::StrFormat(
                         "coordinator %s %s; reconnecting in %.2f s",
                         o_.coordinator,
                         end.ok() ? "went away" : "unreachable", delay));
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(delay);
    while (!stop_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::OkStatus();
}

absl::Status Daemon::Prepare(const std::string& config_yaml) {
  auto config = ParseConfig(config_yaml, "the coordinator's config");
  if (!config.ok()) return config.status();
  auto device = ResolveDevice(o_.device);
  if (!device.ok()) return device.status();
  o_.device = device->str();
  if (auto st = CheckPrecision("train.precision", config->train.precision, *device);
      !st.ok())
    return st;
  const auto start = std::chrono::steady_clock::now();
  auto trainer = LocalTrainer::Create(*config, o_.clients, *device,
                                      o_.state_dir + "/residuals",
                                      Fingerprint(config_yaml), workers_);
  if (!trainer.ok()) return trainer.status();
  trainer_ = std::move(*trainer);
  trainer_->SetAdversary(adversary_);
  send_label_counts_ = TraitsOf(config->method).needs_label_counts;
  if (trainer_->residuals_loaded() > 0)
    LogLine(o_.name, absl::StrCat(trainer_->residuals_loaded(),
                                  " error-feedback residuals restored from ",
                                  o_.state_dir, "/residuals"));
  LogLine(o_.name,
          absl::StrFormat("%d clients (%d..%d) ready on %s in %.1f s; "
                          "%d tasks at once, %d thread(s) each",
                          o_.clients.size(), o_.clients.front(),
                          o_.clients.back(), device->str(),
                          std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count(),
                          workers_, o_.task_threads));
  return absl::OkStatus();
}

void Daemon::Book(int64_t round, int64_t client, int64_t model, Direction dir,
                  Traffic kind, uint64_t bytes) {
  ledger_.Add(round, client, model, dir, kind, bytes);
  bytes_->Add({{"direction", dir == Direction::kUp ? "up" : "down"}})
      .Increment(static_cast<double>(bytes));
}

// Splits a task into one item per model and queues them behind the last
// round end, longest first (an item's work: the client's samples times its
// epochs), so the long HPC members start early and the short ones fill in.
void Daemon::EnqueueTask(v1::Task task) {
  if (task.models_size() == 0) return;
  auto shared = std::make_shared<const v1::Task>(std::move(task));
  auto progress = std::make_shared<TaskProgress>();
  progress->start = std::chrono::steady_clock::now();
  progress->remaining = shared->models_size();
  const double passes = shared->train().local_steps() > 0
                            ? shared->train().local_steps()
                            : std::max<uint64_t>(1, shared->train().local_epochs());
  const double work =
      static_cast<double>(trainer_->NumSamples(shared->client_id())) * passes;
  for (const v1::ModelTask& mt : shared->models())
    models_.Expect(mt.model_id(), mt.model_version(), shared->client_id());
  {
    MutexLock lock(mu_);
    for (int i = 0; i < shared->models_size(); ++i) {
      Work w;
      w.task = shared;
      w.model_index = i;
      w.expected_work = work;
      w.progress = progress;
      auto at = work_.end();
      while (at != work_.begin()) {
        auto prev = std::prev(at);
        if (prev->round_end || prev->expected_work >= work) break;
        at = prev;
      }
      work_.insert(at, std::move(w));
    }
  }
  cv_.notify_all();
}

void Daemon::Enqueue(Work w) {
  {
    MutexLock lock(mu_);
    work_.push_back(std::move(w));
  }
  cv_.notify_all();
}

}  // namespace shefl
