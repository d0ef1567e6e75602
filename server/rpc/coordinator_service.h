// The gRPC face of the coordinator (proto/shefl.proto). Handlers check the
// caller (server/rpc/caller_checks.h), validate, book every message in the byte
// ledger, and hand the work to the shared CoordinatorState; the round loop
// (server/coordinator.cc) does the rest. Register and Heartbeat are in
// coordinator_service.cc, TaskFeed in task_feed.cc, DownloadModel in
// coordinator_download.cc, UploadDelta in coordinator_upload.cc. The two
// streams that wait on the other side, TaskFeed (for tasks) and
// UploadDelta (for bytes), use gRPC's callback API: a waiting stream
// holds no thread. Register, Heartbeat and DownloadModel use the
// synchronous one (their requests arrive whole before a handler runs, and
// a download writes without waiting). Every call's metadata token is
// checked before any work (CheckCallStart).
// Thread-safe: gRPC calls the handlers on many threads; all shared state
// is CoordinatorState's.
#ifndef SHEFL_SERVER_RPC_COORDINATOR_SERVICE_H_
#define SHEFL_SERVER_RPC_COORDINATOR_SERVICE_H_

#include <algorithm>
#include <utility>

#include "common/net/call_metadata.h"
#include "server/rpc/call_limits.h"
#include "server/rpc/caller_checks.h"
#include "server/rpc/stream_watchdog.h"
#include "server/shared/coordinator_state.h"
#include "shefl.grpc.pb.h"

namespace shefl {

class CoordinatorService final
    : public v1::Coordinator::WithCallbackMethod_UploadDelta<
          v1::Coordinator::WithCallbackMethod_TaskFeed<
              v1::Coordinator::Service>> {
 public:
  explicit CoordinatorService(
      CoordinatorState* state,
      int max_calls_per_host = CallLimits::kDefaultPerHost,
      int max_calls_per_identity = CallLimits::kDefaultPerIdentity)
      : s_(state),
        limits_(max_calls_per_host, max_calls_per_identity),
        thread_limits_(std::min(max_calls_per_host, kThreadCallsPerHost),
                       std::min(max_calls_per_identity,
                                kThreadCallsPerIdentity)) {}

  grpc::Status Register(grpc::ServerContext* ctx,
                        const v1::RegisterRequest* req,
                        v1::RegisterReply* reply) override;
  grpc::ServerWriteReactor<v1::FeedMessage>* TaskFeed(
      grpc::CallbackServerContext* ctx,
      const v1::TaskFeedRequest* req) override;
  grpc::Status DownloadModel(
      grpc::ServerContext* ctx, const v1::DownloadRequest* req,
      grpc::ServerWriter<v1::ModelChunk>* writer) override;
  grpc::ServerReadReactor<v1::DeltaChunk>* UploadDelta(
      grpc::CallbackServerContext* ctx, v1::UploadReply* reply) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         const v1::HeartbeatRequest* req,
                         v1::HeartbeatReply* reply) override;
  grpc::Status Secure(grpc::ServerContext* ctx, const v1::SecureCall* call,
                      v1::SecureReply* reply) override;
  // A secure-aggregation feed message or call of `stage` (common/net/wire.h):
  // the round's secure_bytes and shefl_secure_bytes_total.
  void BookSecure(int64_t round, const std::string& stage, Direction dir,
                  uint64_t bytes);

 private:
  // Books one message in the ledger and the byte metrics.
  void Book(int64_t round, int64_t client, int64_t model, Direction dir,
            Traffic kind, uint64_t bytes);
  class UploadReactor;
  class FeedReactor;
  // TaskFeed's checks and bookings before the stream opens: the caller,
  // its session's feed cap, its clients' reports. The session and the
  // call's slot, or the refusal.
  struct OpenFeed {
    std::shared_ptr<DaemonSession> session;
    CallLimits::Slot slot;
  };
  absl::StatusOr<OpenFeed> CheckFeed(grpc::CallbackServerContext* ctx,
                                     const v1::TaskFeedRequest& req,
                                     grpc::Status* refused);
  void BookFeedRequest(DaemonSession& session, const v1::TaskFeedRequest& req);
  // A daemon back mid-round gets its clients' unfinished work again.
  void Redeliver(DaemonSession& session);
  // What an upload header was checked against: the open round it goes
  // into, its budget k and the most bytes its blob may have.
  struct UploadPlan {
    std::shared_ptr<RoundState> state;
    int64_t k = 0;
    uint64_t limit = 0;
  };
  // Everything that can be checked before the blob: owner, round,
  // assignment, version, not already received, declared size.
  absl::StatusOr<UploadPlan> CheckUploadHeader(const v1::UploadHeader& h) const;
  // Decodes, bounds and buffers the blob into plan.state (which then waits
  // for the caller's Replied()).
  absl::Status AcceptUpload(const v1::UploadHeader& h, const UploadPlan& plan,
                            const std::string& blob);
  // The Secure call's checks (caller, party, open round, session) and the
  // session's own (server/state/secure_session.h).
  absl::Status TakeSecureCall(grpc::ServerContext* ctx,
                              const v1::SecureCall& call);
  // At the start of every call but Register: the metadata token (when the
  // run has one) and, when the caller sends one, its session and identity;
  // then a slot under the caller's host and identity bounds
  // (server/rpc/call_limits.h), held for the call's life.
  absl::Status CheckCallStart(grpc::ServerContextBase* ctx) const;
  // The live session `session_id` names, when the caller is the identity
  // that registered it: UNAUTHENTICATED ("unknown session: register
  // first", a call outside any round) without one, PERMISSION_DENIED
  // ("not_owner") for another identity's (server/rpc/caller_checks.h).
  absl::StatusOr<std::shared_ptr<DaemonSession>> Authenticate(
      grpc::ServerContextBase* ctx, const std::string& session_id) const;
  absl::StatusOr<CallLimits::Slot> StartCall(grpc::ServerContextBase* ctx);
  // StartCall's slot and a second, tighter one for the calls that hold a
  // server thread while open (DownloadModel), so no one host or
  // identity can take the sync server's threads (512) from the others.
  using ThreadCallSlots = std::pair<CallLimits::Slot, CallLimits::Slot>;
  absl::StatusOr<ThreadCallSlots> StartThreadCall(grpc::ServerContextBase* ctx);
  // Books a served download (`down`: the chunk bytes written).
  // Books each client under the round `round_of` gives it.
  void BookDownload(const v1::DownloadRequest& req, uint64_t down,
                    const RoundOfClient& round_of);
  // The round of a client's task: the open round, or its buffered ticket.
  RoundOfClient RoundOf(const std::shared_ptr<RoundState>& open) const;
  // round.mode buffered: refuses an upload past buffered.max_staleness.
  absl::Status CheckFresh(RoundState& state, int64_t client, int64_t model,
                          uint64_t version) const;
  // Counts a refused RPC (by reason; an upload also as rejected or late),
  // logs it (at most kLogsPerSecond lines a second, then a count of those
  // left out), and returns its gRPC status. Its bytes stay out of the
  // ledger. `in_round`: false for a call without a live session (no token,
  // unknown session), which is counted on /metrics only, never in the
  // open round's record.
  grpc::Status Refuse(const std::string& rpc, const absl::Status& st,
                      uint64_t bytes, bool update = false,
                      bool in_round = true);
  void LogRefusal(const std::string& line);
  // Who the caller is: "cert:<CN>" under mutual TLS (the certificate's
  // common name, never one of its SANs), else the identity its token
  // proves ("token" for the shared token, "token:NAME" for a daemon's own;
  // common/net/token_book.h), or "anonymous" when no token is asked for.
  // `token`: the one the caller sent (Register's field; other calls send
  // it as metadata, read when `token` is null).
  std::string PeerIdentity(grpc::ServerContextBase* ctx,
                           const std::string* token = nullptr) const;

  // When an upload or download stream opened now is cancelled: the
  // deadline of round `round` (a buffered ticket), else of the open round,
  // plus kStreamGrace (now plus it between rounds).
  StreamWatchdog::Clock::time_point StreamUntil(int64_t round = 0) const;

  // Longest daemon name or device accepted, in bytes.
  static constexpr size_t kMaxNameBytes = 128;
  static constexpr std::chrono::seconds kStreamGrace{5};

  static constexpr int kLogsPerSecond = 20;
  static constexpr int kMaxFeeds = 2;  // open TaskFeeds per session
  // Thread-holding calls: half the sync server's threads per host, an
  // eighth per identity (a daemon holds a download per task slot).
  static constexpr int kThreadCallsPerHost = 256;
  static constexpr int kThreadCallsPerIdentity = 64;

  CoordinatorState* s_;
  CallLimits limits_;
  CallLimits thread_limits_;
  StreamWatchdog watchdog_;
  Mutex log_mu_;
  int64_t log_second_ ABSL_GUARDED_BY(log_mu_) = 0;
  int logged_ ABSL_GUARDED_BY(log_mu_) = 0;
  int64_t unlogged_ ABSL_GUARDED_BY(log_mu_) = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RPC_COORDINATOR_SERVICE_H_
