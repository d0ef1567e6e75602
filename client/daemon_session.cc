// One connection to the coordinator: register, hold the task feed, run the
// worker threads (TaskQueue -> TaskTrainer) and the heartbeat, and end
// when the feed does.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "client/daemon.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/net/grpc_status.h"
#include "common/net/label_counts.h"
#include "common/net/wire.h"

namespace shefl {

absl::StatusOr<Daemon::SessionEnd> Daemon::Session(
    v1::Coordinator::Stub& stub) {
  SHEFL_ASSIGN_OR_RETURN(const CoordinatorLink link, Register(stub));
  grpc::ClientContext feed_ctx;
  link.AddCallMetadata(&feed_ctx);
  const v1::TaskFeedRequest feed_req = FeedRequest(link.session_id);
  auto reader = stub.TaskFeed(&feed_ctx, feed_req);
  BookFeedRequest(feed_req);
  metrics_->SetState(DaemonState::kIdle);
  std::vector<std::thread> workers;
  for (int slot = 0; slot < (stack_round_ ? 1 : workers_); ++slot)
    workers.emplace_back([this, &link, slot] { WorkLoop(link, slot); });
  last_heard_ns_ = SteadyNs();
  std::thread beat([this, &link, &feed_ctx] { HeartbeatLoop(link, &feed_ctx); });
  const bool shutdown = ReadFeed(reader.get(), link);
  if (!shutdown) feed_ctx.TryCancel();
  reader->Finish();
  queue_->Close();
  for (std::thread& w : workers) w.join();
  beat.join();
  queue_->FlushRoundEnds();
  metrics_->SetState(DaemonState::kDisconnected);
  return shutdown || stop_ ? SessionEnd::kShutdown : SessionEnd::kLost;
}

// Registers the daemon's clients; the first registration also brings the
// run's config, from which the trainer is prepared.
absl::StatusOr<CoordinatorLink> Daemon::Register(v1::Coordinator::Stub& stub) {
  v1::RegisterRequest req;
  req.set_daemon_name(o_.name);
  req.set_token(token_);
  req.set_device(o_.device);
  for (int64_t c : o_.clients) req.add_clients()->set_client_id(c);
  if (o_.clients.empty()) req.set_auto_clients(o_.auto_clients);
  v1::RegisterReply reply;
  grpc::ClientContext reg_ctx;
  reg_ctx.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::seconds(10));
  grpc::Status st = stub.Register(&reg_ctx, req, &reply);
  if (!st.ok()) {
    if (st.error_code() == grpc::StatusCode::UNAVAILABLE ||
        st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
      return absl::UnavailableError(st.error_message());
    return absl::Status(FromGrpc(st).code(),
                        absl::StrCat("registration refused: ", st.error_message()));
  }
  known_round_ = static_cast<int64_t>(reply.current_round());
  // The coordinator is authoritative on which rounds are over: one resumed
  // from a checkpoint runs again a round whose end it had already announced
  // (it checkpoints a round while the next one runs).
  queue_->Open(std::max<int64_t>(0, known_round_ - 1));
  books_->Book(known_round_, kDaemonTraffic, kNoModel, Direction::kUp,
               Traffic::kControl, WireSize(req));
  books_->Book(known_round_, kDaemonTraffic, kNoModel, Direction::kDown,
               Traffic::kControl, WireSize(reply));
  CoordinatorLink link{&stub, reply.session_id(), token_};
  if (exposer_) exposer_->SetRunId(reply.run_id());
  if (trainer_) trainer_->NewSession();
  if (secure_) secure_->NewSession();
  SHEFL_RETURN_IF_ERROR(AdoptClients(reply));
  LogLine(o_.name, absl::StrCat("registered with ", o_.coordinator,
                                " for run '", reply.run_name(), "'"));
  if (!trainer_)
    SHEFL_RETURN_IF_ERROR(Prepare(reply.config_yaml()));
  return link;
}

// auto:N: from the first registration on, the clients the coordinator
// assigned, explicitly, also after a reconnect.
absl::Status Daemon::AdoptClients(const v1::RegisterReply& reply) {
  if (!o_.clients.empty()) return absl::OkStatus();
  o_.clients.assign(reply.clients().begin(), reply.clients().end());
  if (o_.clients.empty())
    return absl::InternalError("the coordinator assigned no clients");
  LogLine(o_.name, absl::StrCat("the coordinator assigned clients ",
                                o_.clients.front(), "..", o_.clients.back()));
  return absl::OkStatus();
}

v1::TaskFeedRequest Daemon::FeedRequest(const std::string& session_id) const {
  const LocalTrainer& local = trainer_->local();
  v1::TaskFeedRequest req;
  req.set_session_id(session_id);
  for (int64_t c : o_.clients) {
    v1::LogicalClient* lc = req.add_clients();
    lc->set_client_id(c);
    lc->set_num_samples(adversary_ ? adversary_->ClaimSamples(local.NumSamples(c))
                                   : local.NumSamples(c));
    lc->set_capacity(o_.capacity);
    if (send_label_counts_)
      for (uint64_t n : adversary_ ? adversary_->ClaimLabels(local.LabelCounts(c))
                                   : local.LabelCounts(c))
        lc->add_label_counts(n);
  }
  return req;
}

// A client's label histogram under that client, the rest under the daemon
// (the coordinator books them alike); the histograms' bytes also go to
// <out>/<name>.labels.json for whoever compares the two books.
void Daemon::BookFeedRequest(const v1::TaskFeedRequest& req) {
  uint64_t daemon_bytes = WireSize(req);
  nlohmann::json by_client = nlohmann::json::object();
  for (const v1::LogicalClient& c : req.clients()) {
    const uint64_t b = LabelCountBytes(c);
    if (b == 0) continue;
    daemon_bytes -= b;
    books_->Book(known_round_, c.client_id(), kNoModel, Direction::kUp,
                 Traffic::kControl, b);
    by_client[std::to_string(c.client_id())] = b;
  }
  books_->Book(known_round_, kDaemonTraffic, kNoModel, Direction::kUp,
               Traffic::kControl, daemon_bytes);
  if (by_client.empty()) return;
  std::ofstream out(o_.out_dir + "/" + o_.name + ".labels.json");
  out << nlohmann::json{{"round", known_round_.load()},
                        {"label_count_bytes", by_client}}
             .dump()
      << "\n";
}

bool Daemon::ReadFeed(grpc::ClientReaderInterface<v1::FeedMessage>* reader,
                      const CoordinatorLink& link) {
  v1::FeedMessage msg;
  while (!stop_ && reader->Read(&msg)) {
    last_heard_ns_ = SteadyNs();
    books_->Book(FeedRound(msg, known_round_), FeedClient(msg), FeedModel(msg),
                 Direction::kDown, Traffic::kControl, WireSize(msg));
    if (msg.has_task()) {
      AcceptTask(msg.task());
    } else if (*SecureStage(msg) != '\0') {
      if (secure_) secure_->OnFeed(link, msg);
    } else if (msg.has_round_end()) {
      if (secure_) secure_->RoundEnded(msg.round_end().round());
      queue_->PushRoundEnd(static_cast<int64_t>(msg.round_end().round()));
    } else if (msg.has_shutdown()) {
      LogLine(o_.name, absl::StrCat("coordinator ended the run (",
                                    msg.shutdown().reason(), ")"));
      return true;
    }
  }
  return false;
}

void Daemon::AcceptTask(v1::Task task) {
  known_round_ = std::max<int64_t>(known_round_, task.round());
  // The deadline travels as a duration: turned into this machine's clock
  // here, so a skewed clock costs nothing.
  task.set_deadline_unix_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          (std::chrono::system_clock::now() +
           std::chrono::milliseconds(task.deadline_in_ms()))
              .time_since_epoch())
          .count());
  queue_->NoteTaskArrival();
  if (task.models_size() == 0) return;
  // The cache learns who needs which version before any worker can fetch.
  trainer_->Expect(task);
  const double work = trainer_->ExpectedWork(task);
  queue_->PushTask(std::move(task), work);
}

// One item at a time, or a whole round where the daemon stacks it.
void Daemon::WorkLoop(const CoordinatorLink& link, int slot) {
  if (stack_round_) {
    for (std::vector<WorkItem> round = queue_->TakeRound(); !round.empty();
         round = queue_->TakeRound()) {
      trainer_->Run(link, round, slot);
      for (const WorkItem& w : round) queue_->Done(w);
    }
    return;
  }
  while (std::optional<WorkItem> item = queue_->Take()) {
    trainer_->Run(link, absl::MakeConstSpan(&*item, 1), slot);
    queue_->Done(*item);
  }
}

// Keepalive finds a dead connection; the heartbeat finds a live connection
// to a coordinator that no longer knows this session, and then ends the
// feed so that the daemon registers again. It is sent only after
// heartbeat_s without a feed message (while tasks flow the feed itself
// shows the session is alive).
void Daemon::HeartbeatLoop(const CoordinatorLink& link,
                           grpc::ClientContext* feed_ctx) {
  if (o_.heartbeat_s <= 0) return;
  const auto every = static_cast<int64_t>(o_.heartbeat_s * 1e9);
  while (!queue_->WaitClosed(std::chrono::milliseconds(200)))
    if (SteadyNs() - last_heard_ns_ >= every) Heartbeat(link, feed_ctx);
}

// Booked like all traffic, under the round the coordinator names in its
// reply (the round it books it under).
void Daemon::Heartbeat(const CoordinatorLink& link,
                       grpc::ClientContext* feed_ctx) {
  v1::HeartbeatRequest req;
  req.set_session_id(link.session_id);
  v1::HeartbeatReply reply;
  grpc::ClientContext ctx;
  link.AddCallMetadata(&ctx);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  const grpc::Status st = link.stub->Heartbeat(&ctx, req, &reply);
  last_heard_ns_ = SteadyNs();
  if (st.ok()) {
    const auto round = static_cast<int64_t>(reply.round());
    books_->Book(round, kDaemonTraffic, kNoModel, Direction::kUp,
                 Traffic::kControl, WireSize(req));
    books_->Book(round, kDaemonTraffic, kNoModel, Direction::kDown,
                 Traffic::kControl, WireSize(reply));
  } else if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
             st.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
    LogLine(o_.name, absl::StrCat("heartbeat refused (", st.error_message(),
                                  "): registering again"));
    feed_ctx->TryCancel();
  }
}

}  // namespace shefl
