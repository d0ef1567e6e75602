// The coordinator's Secure call: a party's message of one stage of a
// secure-aggregation session (server/state/secure_session.h). The caller
// must own the party (a party's id is the lowest client id it hosts in the
// session) and name the open round; the session takes the message or
// refuses it whole. Each message and its reply are booked under the party
// and the model, the masked input as payload, the rest as control, and in
// the round's secure_bytes by stage.
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/net/wire.h"
#include "server/rpc/caller_checks.h"
#include "server/rpc/coordinator_service.h"
#include "server/state/refusal.h"

namespace shefl {

absl::Status CoordinatorService::TakeSecureCall(grpc::ServerContext* ctx,
                                                const v1::SecureCall& call) {
  SHEFL_ASSIGN_OR_RETURN(std::shared_ptr<DaemonSession> session,
                         Authenticate(ctx, call.session_id()));
  SHEFL_RETURN_IF_ERROR(CheckOwner(session.get(), call.party()));
  auto open = s_->open_round();
  if (!open || open->round() != static_cast<int64_t>(call.round()))
    return WithReason(absl::FailedPreconditionError(absl::StrCat(
                          "round ", call.round(), " is not open")),
                      "late");
  auto secure = s_->secure_session(call.model_id());
  if (!secure)
    return absl::FailedPreconditionError(absl::StrCat(
        "no secure session for model ", call.model_id(), " in round ",
        call.round()));
  return secure->Take(call);
}

grpc::Status CoordinatorService::Secure(grpc::ServerContext* ctx,
                                        const v1::SecureCall* call,
                                        v1::SecureReply* reply) {
  auto slot = StartCall(ctx);
  if (!slot.ok())
    return Refuse("secure", slot.status(), WireSize(*call), false,
                  /*in_round=*/false);
  if (auto st = TakeSecureCall(ctx, *call); !st.ok())
    return Refuse("secure",
                  WithContext(st, absl::StrCat("party ", call->party(),
                                               " model ", call->model_id(),
                                               " round ", call->round(), ": ")),
                  WireSize(*call));
  reply->set_accepted(true);
  const int64_t round = static_cast<int64_t>(call->round());
  const std::string stage = SecureStage(*call);
  const Traffic up_kind =
      call->has_input() ? Traffic::kPayload : Traffic::kControl;
  Book(round, call->party(), call->model_id(), Direction::kUp, up_kind,
       WireSize(*call));
  Book(round, call->party(), call->model_id(), Direction::kDown,
       Traffic::kControl, WireSize(*reply));
  BookSecure(round, stage, Direction::kUp, WireSize(*call));
  BookSecure(round, stage, Direction::kDown, WireSize(*reply));
  return grpc::Status::OK;
}

void CoordinatorService::BookSecure(int64_t round, const std::string& stage,
                                    Direction dir, uint64_t bytes) {
  if (stage.empty()) return;
  s_->secure_bytes.Add(round, stage, dir, bytes);
  s_->metrics.AddSecureBytes(dir == Direction::kUp ? "up" : "down", stage,
                             bytes);
}

}  // namespace shefl
