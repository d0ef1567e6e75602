#include "server/rpc/coordinator_service.h"

#include <grpc/grpc_security_constants.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "common/net/grpc_status.h"
#include "common/net/label_counts.h"
#include "common/net/run_label.h"
#include "common/net/tls.h"
#include "common/net/wire.h"
#include "common/sparse/codec.h"
#include "server/rpc/caller_checks.h"

namespace shefl {

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
                                        bool update, bool in_round) {
  const std::string reason = RefusalReason(st);
  if (in_round)
    if (auto open = s_->open_round()) open->CountRefusal(reason, bytes, update);
  s_->metrics.CountRefusal(rpc, reason, bytes);
  if (update && in_round)
    s_->metrics.CountUpdate(reason == "late" ? "late" : "rejected");
  LogRefusal(absl::StrCat("refused ", rpc, " (", reason, "): ",
                          LogSafe(std::string(st.message()), 200)));
  return ToGrpc(st);
}

// A flood of refusals must not become a flood of log lines (nor fill the
// disk): kLogsPerSecond a second, then one line with the count left out.
void CoordinatorService::LogRefusal(const std::string& line) {
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t skipped = 0;
  {
    MutexLock lock(log_mu_);
    if (now != log_second_) {
      skipped = unlogged_;
      log_second_ = now;
      logged_ = 0;
      unlogged_ = 0;
    }
    if (logged_ >= kLogsPerSecond) {
      ++unlogged_;
      return;
    }
    ++logged_;
  }
  if (skipped > 0)
    LogLine("coordinator", absl::StrCat(skipped, " more refusals not logged "
                                        "(at most ", kLogsPerSecond,
                                        " lines a second)"));
  LogLine("coordinator", line);
}

namespace {

std::string MetadataToken(grpc::ServerContextBase* ctx) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(kTokenMetadata);
  return it == md.end() ? std::string()
                        : std::string(it->second.data(), it->second.size());
}

}  // namespace

absl::Status CoordinatorService::CheckCallStart(
    grpc::ServerContextBase* ctx) const {
  if (s_->tokens.required() && !s_->tokens.Identify(MetadataToken(ctx)))
    return absl::UnauthenticatedError(
        "wrong or missing token (call metadata shefl-token)");
  const auto& md = ctx->client_metadata();
  auto it = md.find(kSessionMetadata);
  if (it == md.end()) return absl::OkStatus();  // checked with the request
  return Authenticate(ctx, std::string(it->second.data(), it->second.size()))
      .status();
}

absl::StatusOr<std::shared_ptr<DaemonSession>> CoordinatorService::Authenticate(
    grpc::ServerContextBase* ctx, const std::string& session_id) const {
  auto session = s_->registry.BySession(session_id);
  if (!session)
    return absl::UnauthenticatedError("unknown session: register first");
  SHEFL_RETURN_IF_ERROR(CheckCaller(session.get(), PeerIdentity(ctx)));
  return session;
}

absl::StatusOr<CallLimits::Slot> CoordinatorService::StartCall(
    grpc::ServerContextBase* ctx) {
  SHEFL_RETURN_IF_ERROR(CheckCallStart(ctx));
  return limits_.Enter(ctx->peer(), PeerIdentity(ctx));
}

absl::StatusOr<CoordinatorService::ThreadCallSlots>
CoordinatorService::StartThreadCall(grpc::ServerContextBase* ctx) {
  SHEFL_ASSIGN_OR_RETURN(auto call, StartCall(ctx));
  SHEFL_ASSIGN_OR_RETURN(auto thread,
                         thread_limits_.Enter(ctx->peer(), PeerIdentity(ctx)));
  return ThreadCallSlots(std::move(call), std::move(thread));
}

std::string CoordinatorService::PeerIdentity(grpc::ServerContextBase* ctx,
                                             const std::string* token) const {
  auto auth = ctx->auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    // The subject's CN: a SAN is any name the CA let the holder list, so
    // a SAN equal to another daemon's CN must not make it that daemon.
    std::string id = "cert:";
    for (const grpc::string_ref& cn :
         auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME))
      absl::StrAppend(&id, absl::string_view(cn.data(), cn.size()));
    return id;
  }
  if (!s_->tokens.required()) return "anonymous";
  const std::string sent = token ? *token : MetadataToken(ctx);
  return s_->tokens.Identify(sent).value_or("anonymous");
}

grpc::Status CoordinatorService::Register(grpc::ServerContext* ctx,
                                          const v1::RegisterRequest* req,
                                          v1::RegisterReply* reply) {
  const int64_t round = s_->current_round();
  const std::string who = absl::StrCat("daemon '", LogSafe(req->daemon_name()), "'");
  if (s_->tokens.required() && !s_->tokens.Identify(req->token()))
    return Refuse("register", absl::UnauthenticatedError(absl::StrCat(
                                  who, ": wrong or missing token")),
                  WireSize(*req));
  if (req->daemon_name().size() > kMaxNameBytes ||
      req->device().size() > kMaxNameBytes)
    return Refuse("register", absl::InvalidArgumentError(absl::StrCat(
                                  who, ": name or device longer than ",
                                  kMaxNameBytes, " bytes")),
                  WireSize(*req));
  const std::string identity = PeerIdentity(ctx, &req->token());
  if (identity == "cert:")
    return Refuse("register", absl::PermissionDeniedError(absl::StrCat(
                                  who, ": the client certificate has no CN, "
                                       "which is a daemon's identity")),
                  WireSize(*req));
  auto slot = limits_.Enter(ctx->peer(), identity);
  if (!slot.ok())
    return Refuse("register", slot.status(), WireSize(*req), false,
                  /*in_round=*/false);
  auto session = s_->registry.Register(*req, identity);
  if (!session.ok())
    return Refuse("register", session.status(), WireSize(*req));
  reply->set_session_id((*session)->session_id);
  reply->set_run_name(s_->config.name);
  reply->set_run_id(RunIdOfFolder(s_->config.out_dir));
  reply->set_config_yaml(s_->config_yaml);
  reply->set_current_round(s_->first_open_round());
  for (int64_t id : (*session)->clients) reply->add_clients(static_cast<uint32_t>(id));
  if (req->want_model_layout())
    for (const v1::TensorLayout& t : s_->model_layout) *reply->add_model_layout() = t;
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

grpc::Status CoordinatorService::Heartbeat(grpc::ServerContext* ctx,
                                           const v1::HeartbeatRequest* req,
                                           v1::HeartbeatReply* reply) {
  auto slot = StartCall(ctx);
  if (!slot.ok())
    return Refuse("heartbeat", slot.status(), WireSize(*req), false,
                  /*in_round=*/false);
  if (auto session = Authenticate(ctx, req->session_id()); !session.ok())
    return Refuse("heartbeat", session.status(), WireSize(*req), false,
                  !absl::IsUnauthenticated(session.status()));
  const int64_t round = s_->current_round();
  reply->set_round(round);
  Book(round, kDaemonTraffic, kNoModel, Direction::kUp, Traffic::kControl,
       WireSize(*req));
  Book(round, kDaemonTraffic, kNoModel, Direction::kDown, Traffic::kControl,
       WireSize(*reply));
  return grpc::Status::OK;
}

}  // namespace shefl
