#include "server/coordinator_service.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/codec.h"
#include "common/grpc_status.h"
#include "common/log.h"
#include "common/wire.h"

namespace shefl {

void CoordinatorService::Book(int64_t round, int64_t client, int64_t model,
                              Direction dir, Traffic kind, uint64_t bytes) {
  s_->ledger.Add(round, client, model, dir, kind, bytes);
  std::string tier = "control";
  if (kind == Traffic::kPayload)
    tier = TierName(ClientTier(s_->config.clients,
                               MethodHasTiers(s_->config.method), client));
  s_->metrics.AddBytes(dir == Direction::kUp ? "up" : "down", tier, bytes);
}

grpc::Status CoordinatorService::Register(grpc::ServerContext*,
                                          const v1::RegisterRequest* req,
                                          v1::RegisterReply* reply) {
  const int64_t round = s_->current_round();
  Book(round, kDaemonTraffic, kNoModel, Direction::kUp, Traffic::kControl,
       WireSize(*req));
  auto session = s_->registry.Register(*req);
  if (!session.ok()) {
    LogLine("coordinator", absl::StrCat("refused registration of '",
                                        req->daemon_name(), "': ",
                                        session.status().message()));
    return ToGrpc(session.status());
  }
  reply->set_session_id((*session)->session_id);
  reply->set_run_name(s_->config.name);
  reply->set_config_yaml(s_->config_yaml);
  reply->set_current_round(round);
  Book(round, kDaemonTraffic, kNoModel, Direction::kDown, Traffic::kControl,
       WireSize(*reply));
  const auto& ids = (*session)->clients;
  LogLine("coordinator",
          absl::StrCat("registered daemon '", req->daemon_name(), "' (",
                       ids.size(), " clients ", ids.front(), "..", ids.back(),
                       ", device ", req->device(), ")"));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::TaskFeed(
    grpc::ServerContext* ctx, const v1::TaskFeedRequest* req,
    grpc::ServerWriter<v1::FeedMessage>* writer) {
  Book(s_->current_round(), kDaemonTraffic, kNoModel, Direction::kUp,
       Traffic::kControl, WireSize(*req));
  auto session = s_->registry.BySession(req->session_id());
  if (!session)
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                        "unknown session: register first");
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
  const int64_t round = req->round(), client = req->client_id();
  const int64_t model = req->model_id();
  Book(round, client, model, Direction::kUp, Traffic::kControl,
       WireSize(*req));
  auto session = s_->registry.BySession(req->session_id());
  if (!session)
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "unknown session");
  auto state = s_->open_round();
  if (!state || state->round() != round || state->closed())
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("round ", round, " is not open"));
  if (auto st = state->CheckAssigned(client, model, req->model_version());
      !st.ok())
    return ToGrpc(st);
  auto [snapshot, version] = s_->store->GetVersioned(model);
  if (version != req->model_version())
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        "model changed: round closed");
  const std::vector<float>& w = *snapshot;
  for (uint64_t off = 0; off < w.size() && !ctx->IsCancelled();
       off += kFloatsPerChunk) {
    const uint64_t n = std::min<uint64_t>(kFloatsPerChunk, w.size() - off);
    v1::ModelChunk chunk;
    chunk.set_offset(off);
    chunk.set_total(w.size());
    chunk.set_data(reinterpret_cast<const char*>(w.data() + off),
                   n * sizeof(float));
    if (!writer->Write(chunk))
      return grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled");
    Book(round, client, model, Direction::kDown, Traffic::kPayload,
         WireSize(chunk));
  }
  return grpc::Status::OK;
}

absl::Status CoordinatorService::ReceiveUpload(
    grpc::ServerReader<v1::DeltaChunk>* reader, const v1::DeltaChunk& first) {
  const v1::UploadHeader& h = first.header();
  const int64_t client = h.client_id(), model = h.model_id();
  if (!s_->registry.BySession(h.session_id()))
    return absl::UnauthenticatedError("unknown session");
  auto state = s_->open_round();
  const int64_t now = state ? state->round() : s_->current_round();
  if (static_cast<int64_t>(h.round()) > now)
    return absl::InvalidArgumentError(
        absl::StrCat("round ", h.round(), " has not started (now ", now, ")"));
  if (!state || state->round() != static_cast<int64_t>(h.round()) ||
      state->closed())
    return LateError(
        absl::StrCat("round ", h.round(), " is over: update is late"));
  if (auto st = state->CheckAssigned(client, model, h.model_version());
      !st.ok())
    return st;
  auto k = state->Budget(client, model);
  if (!k.ok()) return k.status();
  auto vt = ParseValueType(s_->config.compression.value_type);
  if (!vt.ok()) return vt.status();
  const uint64_t d = s_->store->dim();
  const uint64_t limit = PredictEncodedSizeUpperBound(d, *k, *vt);
  if (h.encoded_size() > limit)
    return absl::InvalidArgumentError(absl::StrCat(
        "oversize upload: ", h.encoded_size(), " bytes declared, k = ", *k,
        " allows at most ", limit));
  std::string blob;
  blob.reserve(h.encoded_size());
  blob = first.data();
  v1::DeltaChunk chunk;
  while (blob.size() <= h.encoded_size() && reader->Read(&chunk)) {
    Book(h.round(), client, model, Direction::kUp, Traffic::kPayload,
         WireSize(chunk));
    if (chunk.has_header())
      return absl::InvalidArgumentError("malformed upload: header repeated");
    blob += chunk.data();
  }
  if (blob.size() != h.encoded_size())
    return absl::InvalidArgumentError(absl::StrCat(
        blob.size() > h.encoded_size() ? "oversize" : "truncated",
        " upload: ", blob.size(), " bytes received, ", h.encoded_size(),
        " declared"));
  auto delta = DecodeSparseDelta(blob, d, *k);
  if (!delta.ok()) return delta.status();
  return state->Accept(client, model,
                       static_cast<double>(std::max<uint64_t>(h.num_samples(), 1)),
                       std::move(*delta));
}

grpc::Status CoordinatorService::UploadDelta(
    grpc::ServerContext*, grpc::ServerReader<v1::DeltaChunk>* reader,
    v1::UploadReply* reply) {
  v1::DeltaChunk first;
  if (!reader->Read(&first))
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "malformed upload: empty stream");
  const v1::UploadHeader& h = first.header();
  const int64_t round = first.has_header() ? static_cast<int64_t>(h.round())
                                           : s_->current_round();
  const int64_t client = first.has_header() ? h.client_id() : kDaemonTraffic;
  Book(round, client, h.model_id(), Direction::kUp, Traffic::kPayload,
       WireSize(first));
  absl::Status st =
      first.has_header()
          ? ReceiveUpload(reader, first)
          : absl::InvalidArgumentError("malformed upload: no header");
  auto open = s_->open_round();
  if (!st.ok()) {
    const bool late = IsLate(st);
    if (open) late ? open->CountLate() : open->CountRejected();
    s_->metrics.CountUpdate(late ? "late" : "rejected");
    LogLine("coordinator",
            absl::StrCat("refused update of client ", client, " model ",
                         h.model_id(), " round ", round, ": ", st.message()));
    return ToGrpc(st);
  }
  s_->metrics.CountUpdate("accepted");
  reply->set_accepted(true);
  Book(round, client, h.model_id(), Direction::kDown, Traffic::kControl,
       WireSize(*reply));
  return grpc::Status::OK;
}

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext*,
                                           const v1::HeartbeatRequest* req,
                                           v1::HeartbeatReply* reply) {
  const int64_t round = s_->current_round();
  reply->set_round(round);
  Book(round, kDaemonTraffic, kNoModel, Direction::kUp, Traffic::kControl,
       WireSize(*req));
  Book(round, kDaemonTraffic, kNoModel, Direction::kDown, Traffic::kControl,
       WireSize(*reply));
  return grpc::Status::OK;
}

}  // namespace shefl
