// The daemon's start-up and its reconnect loop; one session is in
// daemon_session.cc.
#include "client/daemon.h"

#include <grpcpp/create_channel.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/residual_book.h"
#include "common/core/backoff.h"
#include "common/core/flags.h"
#include "common/core/log.h"
#include "common/core/resources.h"
#include "common/core/status_macros.h"
#include "common/fed/config_load.h"
#include "common/fed/methods/registry.h"
#include "common/learn/device.h"
#include "common/learn/precision.h"
#include "common/net/connect_failure.h"
#include "common/net/keepalive.h"

namespace shefl {

namespace {

// Checks the options and fills in their defaults: name, folders, device.
absl::Status ResolveOptions(DaemonOptions& o) {
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
  SHEFL_ASSIGN_OR_RETURN(auto device, ResolveDevice(o.device));
  o.device = device.str();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ParseClientRanges(const std::string& s) {
  return ParseIdRanges("--clients", s);
}

Daemon::Daemon(DaemonOptions o) : o_(std::move(o)) {}

Daemon::~Daemon() {
  stop_ = true;
}

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Create(DaemonOptions o) {
  // What the options, the device and the TLS files say cannot change by
  // restarting: CannotStart, so `shefl run` does not retry it.
  if (auto st = ResolveOptions(o); !st.ok()) return CannotStart(st);
  std::optional<Adversary> adversary;
  if (!o.adversary.empty()) {
    auto a = Adversary::Parse(o.adversary);
    if (!a.ok()) return CannotStart(a.status());
    adversary = std::move(*a);
  }
  auto d = std::unique_ptr<Daemon>(new Daemon(std::move(o)));
  d->adversary_ = std::move(adversary);
  if (auto st = d->Connectivity(); !st.ok()) return CannotStart(st);
  // Every task on task_threads intra-op threads, as many tasks as cores.
  if (d->o_.task_threads < 1)
    return CannotStart(absl::InvalidArgumentError("--task-threads must be >= 1"));
  const int cores = d->o_.threads > 0 ? d->o_.threads : UsableCores();
  d->workers_ = std::max(1, cores / d->o_.task_threads);
  ConfigureThreads(d->o_.task_threads);
  d->metrics_ = std::make_unique<DaemonMetrics>(d->o_.name);
  d->books_ = std::make_unique<RoundBooks>(
      d->o_.out_dir + "/" + d->o_.name + ".jsonl", d->o_.name,
      d->metrics_->bytes(), d->metrics_->download_bytes());
  d->downloader_ = std::make_unique<ModelDownloader>(d->books_.get());
  d->uploader_ = std::make_unique<TaskUploader>(d->books_.get());
  DaemonMetrics* metrics = d->metrics_.get();
  RoundBooks* books = d->books_.get();
  TaskQueue::Listener listener;
  listener.on_busy = [metrics](bool busy) {
    metrics->SetState(busy ? DaemonState::kTraining : DaemonState::kIdle);
  };
  listener.on_round_done = [books](int64_t round) { books->WriteRoundLine(round); };
  d->queue_ = std::make_unique<TaskQueue>(std::move(listener));
  SHEFL_RETURN_IF_ERROR(d->StartMetrics());
  return d;
}

// TLS (or not), keepalive and the token, as every channel needs them.
absl::Status Daemon::Connectivity() {
  SHEFL_ASSIGN_OR_RETURN(creds_,
                         MakeChannelCredentials(o_.tls, &channel_args_));
  AddClientKeepalive(&channel_args_);
  SHEFL_ASSIGN_OR_RETURN(token_, ReadToken(o_.tls.token_file));
  return absl::OkStatus();
}

absl::Status Daemon::StartMetrics() {
  SHEFL_ASSIGN_OR_RETURN(
      exposer_, MetricsServer::Start(o_.metrics_listen, metrics_->registry()));
  if (!exposer_) return absl::OkStatus();
  // 200 with the state while connected; 503 while not, so a readiness
  // probe or compose healthcheck sees a daemon that cannot work.
  const DaemonMetrics* metrics = metrics_.get();
  exposer_->SetHandler("/healthz", [metrics]() -> absl::StatusOr<std::string> {
    const DaemonState s = metrics->state();
    if (s == DaemonState::kDisconnected)
      return absl::UnavailableError("disconnected\n");
    return std::string(DaemonStateName(s)) + "\n";
  });
  return absl::OkStatus();
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
    // A TLS mistake is named with its flag, not left as "unreachable".
    std::string why = "went away", detail;
    if (!end.ok()) {
      const absl::string_view message = end.status().message();
      const ConnectFailure kind = ClassifyConnectFailure(message, o_.tls);
      why = ExplainConnectFailure(kind, o_.tls);
      // gRPC's own words after the delay, where scripts do not look.
      if (kind == ConnectFailure::kUnreachable)
        detail = absl::StrCat(" (", message.substr(0, 200), ")");
    }
    LogLine(o_.name, absl::StrFormat("coordinator %s %s; reconnecting in %.2f s%s",
                                     o_.coordinator, why, delay, detail));
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(delay);
    while (!stop_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return absl::OkStatus();
}

absl::Status Daemon::Prepare(const std::string& config_yaml) {
  SHEFL_ASSIGN_OR_RETURN(auto config,
                         ParseConfig(config_yaml, "the coordinator's config"));
  SHEFL_ASSIGN_OR_RETURN(auto device, ResolveDevice(o_.device));
  o_.device = device.str();
  SHEFL_RETURN_IF_ERROR(
      CheckPrecision("train.precision", config.train.precision, device));
  const auto start = std::chrono::steady_clock::now();
  SHEFL_ASSIGN_OR_RETURN(
      auto local, LocalTrainer::Create(config, o_.clients, device,
                                       o_.state_dir + "/residuals",
                                       Fingerprint(config_yaml), workers_));
  local->SetAdversary(adversary_);
  stack_round_ = local->stacks();
  // The stack is one computation: on a CPU it takes every core.
  if (stack_round_ && !device.is_cuda())
    ConfigureThreads(o_.threads > 0 ? o_.threads : UsableCores());
  send_label_counts_ = TraitsOf(config.method).needs_label_counts;
  if (local->residuals_loaded() > 0)
    LogLine(o_.name, absl::StrCat(local->residuals_loaded(),
                                  " error-feedback residuals restored from ",
                                  o_.state_dir, "/residuals"));
  if (config.aggregation.secure != "off") {
    SecureSessions::Parts sp;
    sp.name = o_.name;
    sp.books = books_.get();
    sp.residuals = local->residuals();
    sp.dim = static_cast<uint64_t>(local->dim());
    sp.seed = config.seed;
    sp.masked = config.aggregation.secure == "common_support";
    sp.adversary = adversary_;
    sp.dp_min_multiplier = o_.dp_min_multiplier;
    secure_ = std::make_unique<SecureSessions>(std::move(sp));
  }
  TaskTrainer::Parts parts;
  parts.name = o_.name;
  parts.secure = secure_.get();
  parts.local = std::move(local);
  parts.adversary = adversary_;
  parts.queue = queue_.get();
  parts.books = books_.get();
  parts.downloader = downloader_.get();
  parts.uploader = uploader_.get();
  parts.train_seconds = metrics_->train_seconds();
  parts.resident_memory = metrics_->resident_memory();
  parts.slowdown = o_.slowdown;
  parts.task_bursts = config.round.mode != "buffered";
  trainer_ = std::make_unique<TaskTrainer>(std::move(parts));
  const std::string how =
      stack_round_ ? "each round's tasks as one stack"
                   : absl::StrFormat("%d tasks at once, %d thread(s) each",
                                     workers_, o_.task_threads);
  LogLine(o_.name,
          absl::StrFormat("%d clients (%d..%d) ready on %s (%s) in %.1f s; %s",
                          o_.clients.size(), o_.clients.front(),
                          o_.clients.back(), device.str(),
                          ResolvePrecision(config.train.precision, device),
                          std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count(),
                          how));
  return absl::OkStatus();
}

}  // namespace shefl
