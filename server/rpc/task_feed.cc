// The coordinator's TaskFeed, on gRPC's callback API: a reactor per
// connected daemon, attached to its session's FeedQueue
// (server/state/feed_queue.h), which hands it each message as it is
// pushed. An idle feed holds no thread and nothing polls: a thousand
// connected daemons cost a thousand small objects, not a thousand
// threads. The checks before the stream opens are those of every call
// (token, session, identity, the caller's call slots), a cap of kMaxFeeds
// per session, and the ownership of every client the daemon reports.
#include <algorithm>
#include <atomic>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/net/label_counts.h"
#include "common/net/wire.h"
#include "server/rpc/caller_checks.h"
#include "server/rpc/coordinator_service.h"

namespace shefl {

namespace {

// A feed refused before it opened: finishes with the refusal at once.
class RefusedFeed final : public grpc::ServerWriteReactor<v1::FeedMessage> {
 public:
  explicit RefusedFeed(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

// One daemon's open feed. Deletes itself when gRPC is done with the call.
class CoordinatorService::FeedReactor final
    : public grpc::ServerWriteReactor<v1::FeedMessage>,
      public FeedSink {
 public:
  FeedReactor(CoordinatorService* service, OpenFeed open)
      : service_(service),
        session_(std::move(open.session)),
        slot_(std::move(open.slot)) {}

  // After the constructor: from here on the queue may write and end it.
  void Start() {
    CoordinatorState* s = service_->s_;
    s->registry.SetFeedOpen(session_, true);
    s->metrics.SetClientsConnected(s->registry.ConnectedClients());
    session_->feed.Attach(this);
    service_->Redeliver(*session_);
  }

 private:
  void StartWriting(const v1::FeedMessage& m) override {
    current_ = m;
    StartWrite(&current_);
  }
  void End() override { Finish(grpc::Status::OK); }

  void OnWriteDone(bool ok) override {
    if (ok) {
      CoordinatorState* s = service_->s_;
      const int64_t round = FeedRound(current_, s->current_round());
      service_->Book(round, FeedClient(current_), FeedModel(current_),
                     Direction::kDown, Traffic::kControl, WireSize(current_));
      service_->BookSecure(round, SecureStage(current_), Direction::kDown,
                           WireSize(current_));
      shutdown_ = current_.has_shutdown();
    }
    session_->feed.WriteDone(this, ok && !shutdown_);
  }
  void OnCancel() override { session_->feed.Cancel(this); }

  void OnDone() override {
    CoordinatorState* s = service_->s_;
    const bool current = session_->feed.Detach(this);
    // A feed replaced by the daemon's newer one leaves it connected.
    if (current) {
      s->registry.SetFeedOpen(session_, false);
      s->metrics.SetClientsConnected(s->registry.ConnectedClients());
    }
    if (!shutdown_)
      LogLine("coordinator",
              absl::StrCat("daemon '", session_->name, "' feed closed",
                           current ? "" : " (a newer feed replaced it)"));
    --session_->open_feeds;
    delete this;
  }

  CoordinatorService* service_;
  std::shared_ptr<DaemonSession> session_;
  CallLimits::Slot slot_;  // held for the call's life
  v1::FeedMessage current_;  // the write in flight (one at a time)
  std::atomic<bool> shutdown_{false};
};

grpc::ServerWriteReactor<v1::FeedMessage>* CoordinatorService::TaskFeed(
    grpc::CallbackServerContext* ctx, const v1::TaskFeedRequest* req) {
  grpc::Status refused;
  auto open = CheckFeed(ctx, *req, &refused);
  if (!open.ok()) return new RefusedFeed(refused);
  auto* feed = new FeedReactor(this, std::move(*open));
  feed->Start();
  return feed;
}

absl::StatusOr<CoordinatorService::OpenFeed> CoordinatorService::CheckFeed(
    grpc::CallbackServerContext* ctx, const v1::TaskFeedRequest& req,
    grpc::Status* refused) {
  auto fail = [&](const absl::Status& st, bool in_round) {
    *refused = Refuse("feed", st, WireSize(req), false, in_round);
    return st;
  };
  auto slot = StartCall(ctx);
  if (!slot.ok()) return fail(slot.status(), /*in_round=*/false);
  auto caller = Authenticate(ctx, req.session_id());
  if (!caller.ok())
    return fail(caller.status(), !absl::IsUnauthenticated(caller.status()));
  std::shared_ptr<DaemonSession> session = *std::move(caller);
  // A reconnecting daemon's new feed may overlap its old one briefly.
  if (++session->open_feeds > kMaxFeeds) {
    --session->open_feeds;
    return fail(WithReason(absl::ResourceExhaustedError(absl::StrCat(
                               "session already has ", kMaxFeeds,
                               " feeds open")),
                           "too_many_streams"),
                true);
  }
  // Refused whole, before it opens: a daemon reports only the clients it
  // registered, so a report of another one is not a daemon's mistake.
  absl::Status owner = absl::OkStatus();
  for (const v1::LogicalClient& c : req.clients())
    if (owner.ok()) owner = CheckOwner(session.get(), c.client_id());
  if (!owner.ok()) {
    --session->open_feeds;
    return fail(owner, true);
  }
  BookFeedRequest(*session, req);
  return OpenFeed{std::move(session), std::move(*slot)};
}

// A client's label histogram (HASA) is booked under that client, the rest
// of the report under the daemon, as the daemon books them; then the
// shard sizes and client facts go to the registry.
void CoordinatorService::BookFeedRequest(DaemonSession& session,
                                         const v1::TaskFeedRequest& req) {
  const int64_t feed_round = s_->current_round();
  uint64_t daemon_bytes = WireSize(req);
  for (const v1::LogicalClient& c : req.clients()) {
    const uint64_t label_bytes = LabelCountBytes(c);
    daemon_bytes -= label_bytes;
    if (label_bytes > 0)
      Book(feed_round, c.client_id(), kNoModel, Direction::kUp,
           Traffic::kControl, label_bytes);
  }
  Book(feed_round, kDaemonTraffic, kNoModel, Direction::kUp, Traffic::kControl,
       daemon_bytes);
  for (const v1::LogicalClient& c : req.clients()) {
    for (const absl::Status& st :
         {s_->reports.ReportShardSize(session, c.client_id(),
                                       c.num_samples()),
          s_->reports.ReportClientInfo(
              session, c.client_id(),
              std::vector<uint64_t>(c.label_counts().begin(),
                                    c.label_counts().end()),
              c.capacity(), LabelCountBytes(c))})
      if (!st.ok())
        LogLine("coordinator", absl::StrCat("daemon '", LogSafe(session.name),
                                            "': ", st.message()));
  }
}

void CoordinatorService::Redeliver(DaemonSession& session) {
  for (auto [client, open] : s_->open_tasks()) {
    if (!std::binary_search(session.clients.begin(), session.clients.end(),
                            client) ||
        !open.round)
      continue;
    const std::set<int64_t> pending = open.round->pending_models(client);
    v1::FeedMessage msg = std::move(open.task);
    auto* models = msg.mutable_task()->mutable_models();
    models->erase(std::remove_if(models->begin(), models->end(),
                                 [&](const v1::ModelTask& mt) {
                                   return !pending.count(mt.model_id());
                                 }),
                  models->end());
    // What is left of the round's time, not what was left at first.
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        open.round->deadline() - RoundState::Clock::now());
    msg.mutable_task()->set_deadline_in_ms(
        static_cast<uint64_t>(std::max<int64_t>(0, left.count())));
    if (!models->empty()) session.feed.Push(std::move(msg));
  }
}

}  // namespace shefl
