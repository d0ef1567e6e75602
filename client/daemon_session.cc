// One connection to the coordinator: register, hold the task feed, and
// feed a worker thread that runs the tasks in the order they came.
#include <grpcpp/client_context.h>

#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "client/daemon.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/wire.h"

namespace shefl {

absl::StatusOr<Daemon::SessionEnd> Daemon::Session(
    v1::Coordinator::Stub& stub) {
  v1::RegisterRequest req;
  req.set_daemon_name(o_.name);
  req.set_token(token_);
  req.set_device(o_.device);
  for (int64_t c : o_.clients) req.add_clients()->set_client_id(c);
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
  Book(known_round_, kDaemonTraffic, kNoModel, Direction::kUp,
       Traffic::kControl, WireSize(req));
  Book(known_round_, kDaemonTraffic, kNoModel, Direction::kDown,
       Traffic::kControl, WireSize(reply));
  session_id_ = reply.session_id();
  LogLine(o_.name, absl::StrCat("registered with ", o_.coordinator,
                                " for run '", reply.run_name(), "'"));
  if (!trainer_)
    if (auto prep = Prepare(reply.config_yaml()); !prep.ok()) return prep;

  grpc::ClientContext feed_ctx;
  v1::TaskFeedRequest feed_req;
  feed_req.set_session_id(session_id_);
  for (int64_t c : o_.clients) {
    v1::LogicalClient* lc = feed_req.add_clients();
    lc->set_client_id(c);
    lc->set_num_samples(trainer_->NumSamples(c));
  }
  auto reader = stub.TaskFeed(&feed_ctx, feed_req);
  Book(known_round_, kDaemonTraffic, kNoModel, Direction::kUp,
       Traffic::kControl, WireSize(feed_req));
  {
    std::lock_guard<std::mutex> lock(mu_);
    session_over_ = false;
  }
  std::thread worker([this, &stub] { WorkLoop(&stub); });
  bool shutdown = false;
  v1::FeedMessage msg;
  while (!stop_ && reader->Read(&msg)) {
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
      Enqueue(Work{std::move(task), false, 0});
    } else if (msg.has_round_end()) {
      closed_round_ = static_cast<int64_t>(msg.round_end().round());
      Enqueue(Work{{}, true, closed_round_});
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
    std::lock_guard<std::mutex> lock(mu_);
    session_over_ = true;
  }
  cv_.notify_all();
  worker.join();
  return shutdown || stop_ ? SessionEnd::kShutdown : SessionEnd::kLost;
}

void Daemon::WorkLoop(v1::Coordinator::Stub* stub) {
  for (;;) {
    Work w;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return !work_.empty() || session_over_; });
      if (work_.empty()) return;
      w = std::move(work_.front());
      work_.pop_front();
      if (session_over_ && !w.round_end) continue;  // the session is gone
    }
    if (w.round_end) {
      WriteRoundLine(w.round);
      continue;
    }
    if (static_cast<int64_t>(w.task.round()) <= closed_round_) {
      LogLine(o_.name, absl::StrCat("skipping client ", w.task.client_id(),
                                    ": round ", w.task.round(), " is over"));
      continue;
    }
    RunTask(*stub, w.task);
  }
}

}  // namespace shefl
