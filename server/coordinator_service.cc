#include "server/coordinator_service.h"

#include <algorithm>
#include <set>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/tls.h"
#include "common/codec.h"
#include "common/grpc_status.h"
#include "common/label_counts.h"
#include "common/log.h"
#include "common/wire.h"
#include "server/upload_assembler.h"

namespace shefl {

namespace {

// A session id is a bearer credential only in the hands of the identity
// that registered it (DESIGN.md section 7): under mutual TLS a peer with
// another certificate that learned the id (a log, a copied file) is
// refused, as a session naming a client it does not host is. Without
// mutual TLS every peer is the same identity and this admits it.
absl::Status CheckCaller(const DaemonSession* session,
                         const std::string& peer) {
  if (session && session->identity != peer)
    return WithReason(absl::PermissionDeniedError(
                          "the session belongs to another identity"),
                      "not_owner");
  return absl::OkStatus();
}

}  // namespace

void CoordinatorService::Book(int64_t round, int64_t client, int64_t model,
                              Direction dir, Traffic kind, uint64_t bytes) {
  s_->ledger.Add(round, client, model, dir, kind, bytes);
  std::string tier = "control";
  if (kind == Traffic::kPayload)
    tier = TierName(ClientTier(s_->config.clients, client));
  s_->metrics.AddBytes(dir == Direction::kUp ? "up" : "down", tier, bytes);
}

grpc::Status CoordinatorService::Refuse(const std::string& rpc,
                                        const absl::Status& st, uint64_t bytes,
                                        bool update) {
  const std::string reason = RefusalReason(st);
  if (auto open = s_->open_round()) open->CountRefusal(reason, bytes, update);
  s_->metrics.CountRefusal(rpc, reason, bytes);
  if (update) s_->metrics.CountUpdate(reason == "late" ? "late" : "rejected");
  LogLine("coordinator", absl::StrCat("refused ", rpc, " (", reason, "): ",
                                      LogSafe(std::string(st.message()), 200)));
  return ToGrpc(st);
}

std::string CoordinatorService::PeerIdentity(grpc::ServerContext* ctx) const {
  auto auth = ctx->auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    std::string id = "cert:";
    for (const grpc::string_ref& part : auth->GetPeerIdentity())
      absl::StrAppend(&id, absl::string_view(part.data(), part.size()), ";");
    return id;
  }
  return s_->token.empty() ? "anonymous" : "token";
}

grpc::Status CoordinatorService::Register(grpc::ServerContext* ctx,
                                          const v1::RegisterRequest* req,
                                          v1::RegisterReply* reply) {
  const int64_t round = s_->current_round();
  const std::string who = absl::StrCat("daemon '", LogSafe(req->daemon_name()), "'");
  if (!s_->token.empty() && !TokensEqual(req->token(), s_->token))
    return Refuse("register", absl::UnauthenticatedError(absl::StrCat(
                                  who, ": wrong or missing token")),
                  WireSize(*req));
  if (req->daemon_name().size() > kMaxNameBytes ||
      req->device().size() > kMaxNameBytes)
    return Refuse("register", absl::InvalidArgumentError(absl::StrCat(
                                  who, ": name or device longer than ",
                                  kMaxNameBytes, " bytes")),
                  WireSize(*req));
  auto session = s_->registry.Register(*req, PeerIdentity(ctx));
  if (!session.ok())
    return Refuse("register", session.status(), WireSize(*req));
  reply->set_session_id((*session)->session_id);
  reply->set_run_name(s_->config.name);
  reply->set_config_yaml(s_->config_yaml);
  reply->set_current_round(round);
  for (int64_t id : (*session)->clients) reply->add_clients(static_cast<uint32_t>(id));
  Book(round, kDaemonTraffic, kNoModel, Direction::kUp, Traffic::kControl,
       WireSize(*req));
  Book(round, kDaemonTraffic, kNoModel, Direction::kDown, Traffic::kControl,
       WireSize(*reply));
  const auto& ids = (*session)->clients;
  LogLine("coordinator",
          absl::StrCat("registered ", who, " (", ids.size(), " clients ",
                       ids.front(), "..", ids.back(), ", device ",
                       LogSafe(req->device()), ")"));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::TaskFeed(
    grpc::ServerContext* ctx, const v1::TaskFeedRequest* req,
    grpc::ServerWriter<v1::FeedMessage>* writer) {
  auto session = s_->registry.BySession(req->session_id());
  if (!session)
    return Refuse("feed", absl::UnauthenticatedError(
                              "unknown session: register first"),
                  WireSize(*req));
  // Refused whole, before it opens: a daemon reports only the clients it
  // registered, so a report of another one is not a daemon's mistake.
  absl::Status owner = CheckCaller(session.get(), PeerIdentity(ctx));
  for (const v1::LogicalClient& c : req->clients())
    if (owner.ok()) owner = CheckOwner(session.get(), c.client_id());
  if (!owner.ok()) return Refuse("feed", owner, WireSize(*req));
  // A client's label histogram (HASA) is booked under that client, the
  // rest of the report under the daemon, as the daemon books them.
  const int64_t feed_round = s_->current_round();
  uint64_t daemon_bytes = WireSize(*req);
  for (const v1::LogicalClient& c : req->clients()) {
    const uint64_t label_bytes = LabelCountBytes(c);
    daemon_bytes -= label_bytes;
    if (label_bytes > 0)
      Book(feed_round, c.client_id(), kNoModel, Direction::kUp,
           Traffic::kControl, label_bytes);
  }
  Book(feed_round, kDaemonTraffic, kNoModel, Direction::kUp,
       Traffic::kControl, daemon_bytes);
  for (const v1::LogicalClient& c : req->clients()) {
    for (const absl::Status& st :
         {s_->registry.ReportShardSize(*session, c.client_id(),
                                       c.num_samples()),
          s_->registry.ReportClientInfo(
              *session, c.client_id(),
              std::vector<uint64_t>(c.label_counts().begin(),
                                    c.label_counts().end()),
              c.capacity(), LabelCountBytes(c))})
      if (!st.ok())
        LogLine("coordinator", absl::StrCat("daemon '", LogSafe(session->name),
                                            "': ", st.message()));
  }
  s_->registry.SetFeedOpen(session, true);
  s_->metrics.SetClientsConnected(s_->registry.ConnectedClients());
  // A daemon back mid-round gets its clients' unfinished work again.
  if (auto open = s_->open_round()) {
    for (auto [client, msg] : s_->open_tasks()) {
      if (!std::binary_search(session->clients.begin(),
                              session->clients.end(), client))
        continue;
      const std::set<int64_t> pending = open->pending_models(client);
      auto* models = msg.mutable_task()->mutable_models();
      models->erase(std::remove_if(models->begin(), models->end(),
                                   [&](const v1::ModelTask& mt) {
                                     return !pending.count(mt.model_id());
                                   }),
                    models->end());
      // What is left of the round's time, not what was left at first.
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          open->deadline() - RoundState::Clock::now());
      msg.mutable_task()->set_deadline_in_ms(
          static_cast<uint64_t>(std::max<int64_t>(0, left.count())));
      if (!models->empty()) session->feed.Push(std::move(msg));
    }
  }
  bool shutdown = false;
  while (!shutdown && !ctx->IsCancelled()) {
    auto msg = session->feed.Pop(std::chrono::milliseconds(200));
    if (!msg) {
      if (session->feed.closed()) break;
      continue;
    }
    if (!writer->Write(*msg)) break;
    Book(FeedRound(*msg, s_->current_round()), FeedClient(*msg), kNoModel,
         Direction::kDown, Traffic::kControl, WireSize(*msg));
    shutdown = msg->has_shutdown();
  }
  s_->registry.SetFeedOpen(session, false);
  s_->metrics.SetClientsConnected(s_->registry.ConnectedClients());
  if (!shutdown)
    LogLine("coordinator",
            absl::StrCat("daemon '", session->name, "' feed closed"));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::DownloadModel(
    grpc::ServerContext* ctx, const v1::DownloadRequest* req,
    grpc::ServerWriter<v1::ModelChunk>* writer) {
  const auto watched = watchdog_.Watch(ctx, StreamUntil());
  const int64_t round = req->round(), client = req->client_id();
  const int64_t model = req->model_id();
  auto session = s_->registry.BySession(req->session_id());
  absl::Status st = CheckCaller(session.get(), PeerIdentity(ctx));
  if (st.ok()) st = CheckOwner(session.get(), client);
  auto state = s_->open_round();
  if (st.ok() && (!state || state->round() != round || state->closed()))
    st = LateError(absl::StrCat("round ", round, " is not open"));
  if (st.ok()) st = state->CheckAssigned(client, model, req->model_version());
  if (st.ok()) st = CheckAlsoFor(session.get(), *state, *req);
  ModelSnapshot snapshot;
  if (st.ok()) {
    uint64_t version = 0;
    std::tie(snapshot, version) = s_->store->GetVersioned(model);
    if (version != req->model_version())
      st = LateError("model changed: round closed");
  }
  if (!st.ok()) return Refuse("download", st, WireSize(*req));
  const std::vector<float>& w = *snapshot;
  uint64_t down = 0;
  for (uint64_t off = 0; off < w.size() && !ctx->IsCancelled();
       off += kFloatsPerChunk) {
    const uint64_t n = std::min<uint64_t>(kFloatsPerChunk, w.size() - off);
    v1::ModelChunk chunk;
    chunk.set_offset(off);
    chunk.set_total(w.size());
    chunk.set_data(reinterpret_cast<const char*>(w.data() + off),
                   n * sizeof(float));
    if (!writer->Write(chunk)) {
      BookDownload(*req, down);
      return grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled");
    }
    down += WireSize(chunk);
  }
  BookDownload(*req, down);
  return grpc::Status::OK;
}

// Every client a shared download also serves must be this session's and
// assigned the model, named once.
absl::Status CoordinatorService::CheckAlsoFor(const DaemonSession* session,
                                              const RoundState& state,
                                              const v1::DownloadRequest& req) {
  std::set<int64_t> seen = {static_cast<int64_t>(req.client_id())};
  for (uint32_t c : req.also_for_clients()) {
    if (!seen.insert(c).second)
      return absl::InvalidArgumentError(
          absl::StrCat("download: client ", c, " named twice"));
    if (auto st = CheckOwner(session, c); !st.ok()) return st;
    if (auto st = state.CheckAssigned(c, req.model_id(), req.model_version());
        !st.ok())
      return st;
  }
  return absl::OkStatus();
}

// Each client the download served is booked as if it had made its own
// request and received the same chunks; the transfer once, as it was.
void CoordinatorService::BookDownload(const v1::DownloadRequest& req,
                                      uint64_t down) {
  const int64_t round = req.round(), model = req.model_id();
  v1::DownloadRequest alone = req;
  alone.clear_also_for_clients();
  DownloadBook::Bytes b;
  b.physical_up = WireSize(req);
  b.physical_down = down;
  auto book = [&](int64_t client) {
    alone.set_client_id(client);
    Book(round, client, model, Direction::kUp, Traffic::kControl,
         WireSize(alone));
    Book(round, client, model, Direction::kDown, Traffic::kPayload, down);
    b.logical_up += WireSize(alone);
    b.logical_down += down;
  };
  book(req.client_id());
  for (uint32_t c : req.also_for_clients()) book(c);
  s_->downloads.Add(round, b);
  s_->metrics.AddDownloadBytes(b.logical(), b.physical());
}

absl::Status CoordinatorService::CheckOwner(const DaemonSession* session,
                                          int64_t client) const {
  if (!session) return absl::UnauthenticatedError("unknown session");
  if (!session->Hosts(client))
    return WithReason(absl::PermissionDeniedError(absl::StrCat(
                          "daemon '", LogSafe(session->name),
                          "' does not host client ", client)),
                      "not_owner");
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<RoundState>> CoordinatorService::ReceiveUpload(
    grpc::ServerReader<v1::DeltaChunk>* reader, const v1::DeltaChunk& first,
    uint64_t* bytes_read) {
  const v1::UploadHeader& h = first.header();
  const int64_t client = h.client_id(), model = h.model_id();
  auto session = s_->registry.BySession(h.session_id());
  if (auto st = CheckOwner(session.get(), client); !st.ok()) return st;
  auto state = s_->open_round();
  const int64_t now = state ? state->round() : s_->current_round();
  // Compared unsigned: a round of 2^63 or more, read as signed, would look
  // like the past and be counted late.
  if (h.round() > static_cast<uint64_t>(now))
    return absl::InvalidArgumentError(
        absl::StrCat("round ", h.round(), " has not started (now ", now, ")"));
  if (!state || state->round() != static_cast<int64_t>(h.round()) ||
      state->closed())
    return LateError(
        absl::StrCat("round ", h.round(), " is over: update is late"));
  if (auto st = state->CheckAssigned(client, model, h.model_version());
      !st.ok())
    return WithReason(st, st.code() == absl::StatusCode::kPermissionDenied
                              ? "not_assigned"
                              : "stale");
  auto k = state->Budget(client, model);
  if (!k.ok()) return k.status();
  auto vt = ParseValueType(s_->config.compression.value_type);
  if (!vt.ok()) return vt.status();
  const uint64_t d = s_->store->dim();
  const uint64_t limit = PredictEncodedSizeUpperBound(d, *k, *vt);
  if (h.encoded_size() > limit)
    return WithReason(absl::InvalidArgumentError(absl::StrCat(
                          "oversize upload: ", h.encoded_size(),
                          " bytes declared, k = ", *k, " allows at most ",
                          limit)),
                      "oversize");
  auto blob = ReadUploadBlob(reader, first, bytes_read);
  if (!blob.ok()) return blob.status();
  auto delta = DecodeSparseDelta(*blob, d, *k);
  if (!delta.ok()) {
    // Well formed but with more than k entries is over budget, not a bad
    // delta: decoded again with k bounded by the blob alone (a value takes
    // 2 bytes at least, so what is allocated stays within twice the blob),
    // it is left to Accept to refuse as over_budget.
    auto wide = DecodeSparseDelta(*blob, d,
                                  std::min<uint64_t>(d, blob->size() / 2));
    if (!wide.ok()) return WithReason(delta.status(), "bad_delta");
    delta = std::move(wide);
  }
  // The weight p_i is what the coordinator knows (the shard size the
  // daemon reported once), never the upload header's claim.
  if (auto st = state->Accept(client, model, s_->registry.ShardSize(client),
                              std::move(*delta));
      !st.ok())
    return st;
  return state;
}

// The rest of the stream, put together by UploadAssembler (its rules: each
// chunk non-empty, the whole exactly the declared size). Every chunk read is
// counted, the one that ends the stream with a refusal included.
absl::StatusOr<std::string> CoordinatorService::ReadUploadBlob(
    grpc::ServerReader<v1::DeltaChunk>* reader, const v1::DeltaChunk& first,
    uint64_t* bytes_read) {
  // ReceiveUpload checked the size against the budget's tighter bound; this
  // one is the largest delta the codec can encode at all.
  UploadAssembler upload(PredictEncodedSizeUpperBound(
      kCodecMaxDim, kCodecMaxDim, ValueType::kFp32));
  if (auto st = upload.Begin(first); !st.ok()) return st;
  v1::DeltaChunk chunk;
  // Once complete, one more chunk is read: it would be past the size.
  while (reader->Read(&chunk)) {
    *bytes_read += WireSize(chunk);
    if (auto st = upload.Add(chunk); !st.ok()) return st;
  }
  return upload.Finish();
}

StreamWatchdog::Clock::time_point CoordinatorService::StreamUntil() const {
  const auto now = StreamWatchdog::Clock::now();
  auto open = s_->open_round();
  if (!open || open->deadline() < now) return now + kStreamGrace;
  return open->deadline() + kStreamGrace;
}

namespace {

absl::Status TimedOut(grpc::ServerContext* ctx, absl::Status st) {
  if (!ctx->IsCancelled()) return st;
  return WithReason(absl::DeadlineExceededError(
                        "stream cancelled: still open 5 s after its round's "
                        "deadline"),
                    "timeout");
}

}  // namespace

grpc::Status CoordinatorService::UploadDelta(
    grpc::ServerContext* ctx, grpc::ServerReader<v1::DeltaChunk>* reader,
    v1::UploadReply* reply) {
  const auto watched = watchdog_.Watch(ctx, StreamUntil());
  v1::DeltaChunk first;
  if (!reader->Read(&first))
    return Refuse("upload",
                  TimedOut(ctx, absl::InvalidArgumentError(
                                    "malformed upload: empty stream")),
                  0, true);
  uint64_t bytes = WireSize(first);
  if (!first.has_header())
    return Refuse("upload",
                  absl::InvalidArgumentError("malformed upload: no header"),
                  bytes, true);
  const v1::UploadHeader& h = first.header();
  const absl::Status caller = CheckCaller(
      s_->registry.BySession(h.session_id()).get(), PeerIdentity(ctx));
  auto into = caller.ok() ? ReceiveUpload(reader, first, &bytes)
                          : absl::StatusOr<std::shared_ptr<RoundState>>(caller);
  if (!into.ok())
    return Refuse("upload",
                  WithContext(TimedOut(ctx, into.status()),
                              absl::StrCat("client ", h.client_id(), " model ",
                                           h.model_id(), " round ", h.round(),
                                           ": ")),
                  bytes, true);
  // Booked only now: the ledger holds authenticated, accepted traffic.
  const int64_t round = static_cast<int64_t>(h.round());
  Book(round, h.client_id(), h.model_id(), Direction::kUp, Traffic::kPayload,
       bytes);
  s_->metrics.CountUpdate("accepted");
  reply->set_accepted(true);
  Book(round, h.client_id(), h.model_id(), Direction::kDown, Traffic::kControl,
       WireSize(*reply));
  (*into)->Replied(h.client_id(), h.model_id());
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* ctx,
                                           const v1::HeartbeatRequest* req,
                                           v1::HeartbeatReply* reply) {
  auto session = s_->registry.BySession(req->session_id());
  if (!session)
    return Refuse("heartbeat", absl::UnauthenticatedError("unknown session"),
                  WireSize(*req));
  if (auto st = CheckCaller(session.get(), PeerIdentity(ctx)); !st.ok())
    return Refuse("heartbeat", st, WireSize(*req));
  const int64_t round = s_->current_round();
  reply->set_round(round);
  Book(round, kDaemonTraffic, kNoModel, Direction::kUp, Traffic::kControl,
       WireSize(*req));
  Book(round, kDaemonTraffic, kNoModel, Direction::kDown, Traffic::kControl,
       WireSize(*reply));
  return grpc::Status::OK;
}

}  // namespace shefl
