// One connection to the coordinator: register, hold the task feed, and
// feed the worker threads. Each model of a task is a work item; items of a
// round run longest first on `workers_` threads, and a round's line is
// written once all of its items are done.
#include <grpcpp/client_context.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "client/daemon.h"
#include "common/net/grpc_status.h"
#include "common/net/call_metadata.h"
#include "common/net/label_counts.h"
#include "common/core/log.h"
#include "common/net/wire.h"
#include "common/core/mutex.h"

namespace shefl {

namespace {

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

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
    Book(known_round_, c.client_id(), kNoModel, Direction::kUp,
         Traffic::kControl, b);
    by_client[std::to_string(c.client_id())] = b;
  }
  Book(known_round_, kDaemonTraffic, kNoModel, Direction::kUp,
       Traffic::kControl, daemon_bytes);
  if (by_client.empty()) return;
  std::ofstream out(o_.out_dir + "/" + o_.name + ".labels.json");
  out << nlohmann::json{{"round", known_round_.load()},
                        {"label_count_bytes", by_client}}
             .dump()
      << "\n";
}

absl::StatusOr<Daemon::SessionEnd> Daemon::Session(
    v1::Coordinator::Stub& stub) {
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
  closed_round_ = std::max<int64_t>(0, known_round_ - 1);
  Book(known_round_, kDaemonTraffic, kNoModel, Direction::kUp,
       Traffic::kControl, WireSize(req));
  Book(known_round_, kDaemonTraffic, kNoModel, Direction::kDown,
       Traffic::kControl, WireSize(reply));
  session_id_ = reply.session_id();
  models_.Clear();  // what the last session fetched (or failed to) is gone
  if (o_.clients.empty()) {
    // auto:N: from now on these, explicitly, also after a reconnect.
    o_.clients.assign(reply.clients().begin(), reply.clients().end());
    if (o_.clients.empty())
      return absl::InternalError("the coordinator assigned no clients");
    LogLine(o_.name, absl::StrCat("the coordinator assigned clients ",
                                  o_.clients.front(), "..", o_.clients.back()));
  }
  LogLine(o_.name, absl::StrCat("registered with ", o_.coordinator,
                                " for run '", reply.run_name(), "'"));
  if (!trainer_)
    if (auto prep = Prepare(reply.config_yaml()); !prep.ok()) return prep;

  grpc::ClientContext feed_ctx;
  AddCallMetadata(&feed_ctx);
  v1::TaskFeedRequest feed_req;
  feed_req.set_session_id(session_id_);
  for (int64_t c : o_.clients) {
    v1::LogicalClient* lc = feed_req.add_clients();
    lc->set_client_id(c);
    lc->set_num_samples(adversary_ ? adversary_->ClaimSamples(trainer_->NumSamples(c))
                                   : trainer_->NumSamples(c));
    lc->set_capacity(o_.capacity);
    if (send_label_counts_)
      for (uint64_t n : adversary_ ? adversary_->ClaimLabels(trainer_->LabelCounts(c))
                                   : trainer_->LabelCounts(c))
        lc->add_label_counts(n);
  }
  auto reader = stub.TaskFeed(&feed_ctx, feed_req);
  BookFeedRequest(feed_req);
  {
    MutexLock lock(mu_);
    session_over_ = false;
  }
  SetState(State::kIdle);
  std::vector<std::thread> workers;
  for (int slot = 0; slot < workers_; ++slot)
    workers.emplace_back([this, &stub, slot] { WorkLoop(&stub, slot); });
  last_heard_ns_ = SteadyNs();
  std::thread beat([this, &stub, &feed_ctx] { HeartbeatLoop(&stub, &feed_ctx); });
  bool shutdown = false;
  v1::FeedMessage msg;
  while (!stop_ && reader->Read(&msg)) {
    last_heard_ns_ = SteadyNs();
    Book(FeedRound(msg, known_round_), FeedClient(msg), kNoModel,
         Direction::kDown, Traffic::kControl, WireSize(msg));
    if (msg.has_task()) {
      known_round_ = std::max<int64_t>(known_round_, msg.task().round());
      v1::Task task = msg.task();
      // The deadline travels as a duration: turned into this machine's
      // clock here, so a skewed clock costs nothing.
      task.set_deadline_unix_ms(
          std::chrono::duration_cast<std::chrono::milliseconds>(
              (std::chrono::system_clock::now() +
               std::chrono::milliseconds(task.deadline_in_ms()))
                  .time_since_epoch())
              .count());
      last_task_ns_ = SteadyNs();
      EnqueueTask(std::move(task));
    } else if (msg.has_round_end()) {
      closed_round_ = static_cast<int64_t>(msg.round_end().round());
      Work end;
      end.round_end = true;
      end.round = closed_round_;
      Enqueue(std::move(end));
    } else if (msg.has_shutdown()) {
      LogLine(o_.name, absl::StrCat("coordinator ended the run (",
                                    msg.shutdown().reason(), ")"));
      shutdown = true;
      break;
    }
  }
  if (!shutdown) feed_ctx.TryCancel();
  reader->Finish();
  {
    MutexLock lock(mu_);
    session_over_ = true;
  }
  cv_.notify_all();
  for (std::thread& w : workers) w.join();
  beat.join();
  {
    MutexLock lock(mu_);
    FlushRoundEndsLocked();
  }
  SetState(State::kDisconnected);
  return shutdown || stop_ ? SessionEnd::kShutdown : SessionEnd::kLost;
}

// Keepalive finds a dead connection; the heartbeat finds a live connection
// to a coordinator that no longer knows this session, and then ends the
// feed so that the daemon registers again. It is sent only after
// heartbeat_s without a feed message (while tasks flow the feed itself
// shows the session is alive), and booked like all traffic, under the
// round the coordinator names in its reply (the round it books it under).
void Daemon::HeartbeatLoop(v1::Coordinator::Stub* stub,
                           grpc::ClientContext* feed_ctx) {
  if (o_.heartbeat_s <= 0) return;
  const auto every = static_cast<int64_t>(o_.heartbeat_s * 1e9);
  UniqueLock lock(mu_);
  while (!session_over_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200));
    if (session_over_ || SteadyNs() - last_heard_ns_ < every) continue;
    lock.unlock();
    v1::HeartbeatRequest req;
    req.set_session_id(session_id_);
    v1::HeartbeatReply reply;
    grpc::ClientContext ctx;
    AddCallMetadata(&ctx);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    const grpc::Status st = stub->Heartbeat(&ctx, req, &reply);
    last_heard_ns_ = SteadyNs();
    if (st.ok()) {
      const auto round = static_cast<int64_t>(reply.round());
      Book(round, kDaemonTraffic, kNoModel, Direction::kUp, Traffic::kControl,
           WireSize(req));
      Book(round, kDaemonTraffic, kNoModel, Direction::kDown,
           Traffic::kControl, WireSize(reply));
    } else if (st.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
               st.error_code() == grpc::StatusCode::PERMISSION_DENIED) {
      LogLine(o_.name, absl::StrCat("heartbeat refused (", st.error_message(),
                                    "): registering again"));
      feed_ctx->TryCancel();
    }
    lock.lock();
  }
}

void Daemon::WorkLoop(v1::Coordinator::Stub* stub, int slot) {
  for (;;) {
    Work w;
    {
      UniqueLock lock(mu_);
      cv_.wait(lock, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !work_.empty() || session_over_;
      });
      if (work_.empty()) return;
      w = std::move(work_.front());
      work_.pop_front();
      if (w.round_end) {
        ended_rounds_.push_back(w.round);
        FlushRoundEndsLocked();
        continue;
      }
      if (session_over_) continue;  // the session is gone
      if (in_flight_.empty()) SetState(State::kTraining);
      ++in_flight_[w.task->round()];
    }
    RunModel(*stub, w, slot);
    {
      MutexLock lock(mu_);
      const int64_t round = w.task->round();
      if (--in_flight_[round] == 0) in_flight_.erase(round);
      if (in_flight_.empty()) SetState(State::kIdle);
      FlushRoundEndsLocked();
    }
  }
}

// At most 1 s; the burst itself lasts microseconds to milliseconds. Only
// the physical download bytes depend on it, never a result.
void Daemon::AwaitTaskBurst() const {
  constexpr int64_t kQuietNs = 30'000'000, kMaxNs = 1'000'000'000;
  const int64_t start = SteadyNs();
  while (SteadyNs() - last_task_ns_ < kQuietNs && SteadyNs() - start < kMaxNs)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

int Daemon::InFlightUpToLocked(int64_t round) const {
  int n = 0;
  for (auto it = in_flight_.begin();
       it != in_flight_.end() && it->first <= round; ++it)
    n += it->second;
  return n;
}

void Daemon::FlushRoundEndsLocked() {
  while (!ended_rounds_.empty() &&
         InFlightUpToLocked(ended_rounds_.front()) == 0) {
    WriteRoundLine(ended_rounds_.front());
    ended_rounds_.pop_front();
  }
}

}  // namespace shefl

namespace shefl {

// The token only: the session id is in every request already, and a
// header sent on every call costs bytes the books do not hold (HPACK
// sends a repeated one as an index of a byte or two; a run without a
// token sends nothing extra).
void Daemon::AddCallMetadata(grpc::ClientContext* ctx) const {
  if (!token_.empty()) ctx->AddMetadata(kTokenMetadata, token_);
}

}  // namespace shefl
