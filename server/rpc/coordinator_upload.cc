// The coordinator's UploadDelta, on gRPC's callback API: a stream costs no
// thread while it waits for bytes, so silent streams cannot use up the
// server. The caller's token (call metadata) and session are checked when
// the call starts; the header (first chunk) is checked against the open
// round -- assignment, version, a second upload of the pair, the declared
// size against the budget's bound -- before any blob byte is read or
// reserved; then UploadAssembler puts the stream together, and the delta is
// validated and buffered into the round. Only accepted bytes are booked.
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/fed/robust.h"
#include "common/net/grpc_status.h"
#include "common/net/wire.h"
#include "common/sparse/codec.h"
#include "server/rpc/caller_checks.h"
#include "server/rpc/coordinator_service.h"
#include "server/state/upload_assembler.h"

namespace shefl {

absl::StatusOr<CoordinatorService::UploadPlan> CoordinatorService::CheckUploadHeader(
    const v1::UploadHeader& h) const {
  const int64_t client = h.client_id(), model = h.model_id();
  auto session = s_->registry.BySession(h.session_id());
  SHEFL_RETURN_IF_ERROR(CheckOwner(session.get(), client));
  const int64_t now = s_->current_round();
  // Compared unsigned: a round of 2^63 or more, read as signed, would look
  // like the past and be counted late.
  if (h.round() > static_cast<uint64_t>(now))
    return absl::InvalidArgumentError(
        absl::StrCat("round ", h.round(), " has not started (now ", now, ")"));
  // The open round, or under round.mode buffered the task's ticket.
  auto state = s_->round_numbered(static_cast<int64_t>(h.round()));
  if (!state || state->closed())
    return LateError(
        absl::StrCat("round ", h.round(), " is over: update is late"));
  if (auto st = state->CheckAssigned(client, model, h.model_version());
      !st.ok())
    return WithReason(st, st.code() == absl::StatusCode::kPermissionDenied
                              ? "not_assigned"
                              : "stale");
  SHEFL_RETURN_IF_ERROR(CheckFresh(*state, client, model, h.model_version()));
  // A second upload of the pair is refused here, before its blob is read.
  SHEFL_RETURN_IF_ERROR(state->CheckNotReceived(client, model));
  SHEFL_ASSIGN_OR_RETURN(auto k, state->Budget(client, model));
  SHEFL_ASSIGN_OR_RETURN(auto vt,
                         ParseValueType(s_->config.compression.value_type));
  const uint64_t limit = PredictEncodedSizeUpperBound(s_->store->dim(), k, vt);
  if (h.encoded_size() > limit)
    return WithReason(absl::InvalidArgumentError(absl::StrCat(
                          "oversize upload: ", h.encoded_size(),
                          " bytes declared, k = ", k, " allows at most ",
                          limit)),
                      "oversize");
  return UploadPlan{state, k, limit};
}

absl::Status CoordinatorService::AcceptUpload(const v1::UploadHeader& h,
                                              const UploadPlan& plan,
                                              const std::string& blob) {
  const uint64_t d = s_->store->dim();
  auto delta = DecodeSparseDelta(blob, d, plan.k);
  if (!delta.ok()) {
    // Well formed but with more than k entries is over budget, not a bad
    // delta: decoded again with k bounded by the blob alone (a value takes
    // 2 bytes at least, so what is allocated stays within twice the blob),
    // it is left to Accept to refuse as over_budget.
    auto wide = DecodeSparseDelta(blob, d,
                                  std::min<uint64_t>(d, blob.size() / 2));
    if (!wide.ok()) return WithReason(delta.status(), "bad_delta");
    delta = std::move(wide);
  }
  // aggregation.robust: a coordinate beyond robust.max_abs is refused
  // here, so the sender hears of it (common/fed/robust.h).
  if (s_->config.aggregation.robust)
    if (auto st = CheckMagnitude(*delta, s_->config.robust.max_abs); !st.ok())
      return WithReason(st, "magnitude");
  // The weight p_i is what the coordinator knows (the shard size the
  // daemon reported once, bounded), never the upload header's claim.
  return plan.state->Accept(h.client_id(), h.model_id(),
                            s_->reports.ShardSize(h.client_id()),
                            std::move(*delta));
}

// round.mode buffered: an update trained from a version more than
// buffered.max_staleness applications old is refused at its header, and
// its task stops waiting for the client (its slot frees sooner).
absl::Status CoordinatorService::CheckFresh(RoundState& state, int64_t client,
                                            int64_t model,
                                            uint64_t version) const {
  if (s_->config.round.mode != "buffered") return absl::OkStatus();
  const uint64_t now = s_->store->Version(model);
  const int64_t max = s_->config.buffered.max_staleness;
  if (version > now || now - version <= static_cast<uint64_t>(max))
    return absl::OkStatus();
  state.Abandon(client);
  state.CountRefusal("stale", 0, true);
  return WithReason(
      absl::FailedPreconditionError(absl::StrCat(
          "stale: trained from version ", version, " of model ", model,
          ", now ", now, " (buffered.max_staleness ", max, ")")),
      "stale");
}

StreamWatchdog::Clock::time_point CoordinatorService::StreamUntil(
    int64_t round) const {
  const auto now = StreamWatchdog::Clock::now();
  auto open = s_->round_numbered(round);
  if (!open) open = s_->open_round();
  if (!open || open->deadline() < now) return now + kStreamGrace;
  return open->deadline() + kStreamGrace;
}

// One UploadDelta stream. gRPC calls OnReadDone for each chunk on its own
// threads, one at a time; the reactor ends with exactly one Finish and is
// deleted in OnDone.
class CoordinatorService::UploadReactor
    : public grpc::ServerReadReactor<v1::DeltaChunk> {
 public:
  UploadReactor(CoordinatorService* service, grpc::CallbackServerContext* ctx,
                v1::UploadReply* reply)
      : svc_(service), ctx_(ctx), reply_(reply) {
    // Until its header arrives a stream gets kHeaderWait; then until its
    // round's deadline (plus grace).
    guard_.emplace(svc_->watchdog_.Watch(
        ctx_, StreamWatchdog::Clock::now() + kHeaderWait));
    auto slot = svc_->StartCall(ctx_);
    if (!slot.ok()) {
      End(svc_->Refuse("upload", slot.status(), 0, true, /*in_round=*/false));
      return;
    }
    slot_.emplace(std::move(*slot));
    StartRead(&chunk_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return Complete();
    bytes_ += WireSize(chunk_);
    if (!plan_) return Header();
    if (auto st = assembler_->Add(chunk_); !st.ok()) return Fail(st);
    StartRead(&chunk_);
  }

  void OnDone() override { delete this; }

 private:
  static constexpr std::chrono::seconds kHeaderWait{10};

  void Header() {
    if (!chunk_.has_header())
      return Fail(absl::InvalidArgumentError("malformed upload: no header"));
    header_ = chunk_.header();
    const auto caller = svc_->Authenticate(ctx_, header_.session_id());
    if (!caller.ok()) return Fail(caller.status());
    in_session_ = true;
    auto plan = svc_->CheckUploadHeader(header_);
    if (!plan.ok()) return Fail(plan.status());
    plan_ = std::move(*plan);
    guard_.reset();
    guard_.emplace(svc_->watchdog_.Watch(
        ctx_, svc_->StreamUntil(static_cast<int64_t>(header_.round()))));
    assembler_.emplace(plan_->limit);
    if (auto st = assembler_->Begin(chunk_); !st.ok()) return Fail(st);
    StartRead(&chunk_);
  }

  // The stream ended (or was cancelled).
  void Complete() {
    if (!plan_)
      return Fail(absl::InvalidArgumentError("malformed upload: empty stream"));
    auto blob = assembler_->Finish();
    if (!blob.ok()) return Fail(blob.status());
    if (auto st = svc_->AcceptUpload(header_, *plan_, *blob); !st.ok())
      return Fail(st);
    // Booked only now: the ledger holds authenticated, accepted traffic.
    const int64_t round = static_cast<int64_t>(header_.round());
    svc_->Book(round, header_.client_id(), header_.model_id(), Direction::kUp,
               Traffic::kPayload, bytes_);
    svc_->s_->metrics.CountUpdate("accepted");
    svc_->s_->metrics.CountRoundUpload();
    reply_->set_accepted(true);
    svc_->Book(round, header_.client_id(), header_.model_id(),
               Direction::kDown, Traffic::kControl, WireSize(*reply_));
    plan_->state->Replied(header_.client_id(), header_.model_id());
    End(grpc::Status::OK);
  }

  // Counted in the open round once the header named a session of the
  // caller's (an upload is an update whatever it holds); before that, as
  // every call without a session, on /metrics only.
  void Fail(const absl::Status& st) {
    absl::Status why = st;
    if (ctx_->IsCancelled())
      why = WithReason(absl::DeadlineExceededError(
                           "stream cancelled: no header within 10 s, or "
                           "still open 5 s after its round's deadline"),
                       "timeout");
    if (plan_ || chunk_.has_header())
      why = WithContext(why, absl::StrCat("client ", header_.client_id(),
                                          " model ", header_.model_id(),
                                          " round ", header_.round(), ": "));
    End(svc_->Refuse("upload", why, bytes_, true, in_session_));
  }

  void End(const grpc::Status& status) {
    guard_.reset();
    Finish(status);
  }

  CoordinatorService* const svc_;
  grpc::CallbackServerContext* const ctx_;
  v1::UploadReply* const reply_;
  std::optional<StreamWatchdog::Guard> guard_;
  v1::DeltaChunk chunk_;
  v1::UploadHeader header_;
  std::optional<UploadPlan> plan_;
  std::optional<UploadAssembler> assembler_;
  uint64_t bytes_ = 0;
  bool in_session_ = false;  // the header named a session of the caller's
  std::optional<CallLimits::Slot> slot_;  // held until OnDone
};

grpc::ServerReadReactor<v1::DeltaChunk>* CoordinatorService::UploadDelta(
    grpc::CallbackServerContext* ctx, v1::UploadReply* reply) {
  return new UploadReactor(this, ctx, reply);
}

}  // namespace shefl
