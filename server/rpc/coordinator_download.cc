// The coordinator's DownloadModel: a served model version in 1 MiB chunks,
// booked once on the wire and once per logical client it serves
// (docs/DESIGN.md, "Wire format and byte accounting").
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/net/grpc_status.h"
#include "common/net/wire.h"
#include "server/rpc/caller_checks.h"
#include "server/rpc/coordinator_service.h"

namespace shefl {

grpc::Status CoordinatorService::DownloadModel(
    grpc::ServerContext* ctx, const v1::DownloadRequest* req,
    grpc::ServerWriter<v1::ModelChunk>* writer) {
  const auto watched =
      watchdog_.Watch(ctx, StreamUntil(static_cast<int64_t>(req->round())));
  auto slots = StartThreadCall(ctx);
  if (!slots.ok())
    return Refuse("download", slots.status(), WireSize(*req), false,
                  /*in_round=*/false);
  auto caller = Authenticate(ctx, req->session_id());
  if (absl::IsUnauthenticated(caller.status()))
    return Refuse("download", caller.status(), WireSize(*req), false,
                  /*in_round=*/false);
  const int64_t round = req->round(), client = req->client_id();
  const int64_t model = req->model_id();
  const std::shared_ptr<DaemonSession> session =
      caller.ok() ? *caller : nullptr;
  absl::Status st = caller.status();
  if (st.ok()) st = CheckOwner(session.get(), client);
  // The open round, or under round.mode buffered the task's ticket.
  auto state = s_->round_numbered(round);
  if (st.ok() && (!state || state->closed()))
    st = LateError(absl::StrCat("round ", round, " is not open"));
  if (st.ok()) st = state->CheckAssigned(client, model, req->model_version());
  const RoundOfClient round_of = RoundOf(state);
  if (st.ok()) st = CheckAlsoFor(session.get(), round_of, *req);
  // The version the task handed out: the current one, or one the store
  // keeps for the buffered tasks still in flight.
  ModelSnapshot snapshot;
  if (st.ok()) {
    snapshot = s_->store->GetVersion(model, req->model_version());
    if (!snapshot) st = LateError("model changed: round closed");
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
      BookDownload(*req, down, round_of);
      return grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled");
    }
    down += WireSize(chunk);
  }
  BookDownload(*req, down, round_of);
  return grpc::Status::OK;
}

RoundOfClient CoordinatorService::RoundOf(
    const std::shared_ptr<RoundState>& open) const {
  if (s_->config.round.mode != "buffered")
    return [open](int64_t) { return open; };
  return [this](int64_t client) -> std::shared_ptr<RoundState> {
    const auto tasks = s_->open_tasks();
    auto it = tasks.find(client);
    return it == tasks.end() ? nullptr : it->second.round;
  };
}

// Each client the download served is booked as if it had made its own
// request and received the same chunks; the transfer once, as it was.
void CoordinatorService::BookDownload(const v1::DownloadRequest& req,
                                      uint64_t down,
                                      const RoundOfClient& round_of) {
  const int64_t model = req.model_id();
  v1::DownloadRequest alone = req;
  alone.clear_also_for_clients();
  DownloadBook::Bytes b;
  b.physical_up = WireSize(req);
  b.physical_down = down;
  auto book = [&](int64_t client) {
    const std::shared_ptr<RoundState> own = round_of(client);
    const int64_t round = own ? own->round() : req.round();
    alone.set_client_id(client);
    Book(round, client, model, Direction::kUp, Traffic::kControl,
         WireSize(alone));
    Book(round, client, model, Direction::kDown, Traffic::kPayload, down);
    b.logical_up += WireSize(alone);
    b.logical_down += down;
  };
  book(req.client_id());
  for (uint32_t c : req.also_for_clients()) book(c);
  s_->downloads.Add(req.round(), b);
  s_->metrics.AddDownloadBytes(b.logical(), b.physical());
}

}  // namespace shefl
