// The coordinator's UploadDelta: caller checks, the chunked stream put
// together by UploadAssembler, validation and buffering into the open
// round, and the booking of accepted bytes only.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/net/grpc_status.h"
#include "common/net/label_counts.h"
#include "common/net/wire.h"
#include "common/sparse/codec.h"
#include "server/caller_checks.h"
#include "server/coordinator_service.h"
#include "server/upload_assembler.h"

namespace shefl {

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

}  // namespace shefl
