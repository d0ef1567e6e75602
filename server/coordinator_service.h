// The gRPC face of the coordinator (proto/shefl.proto). Handlers check the
// caller (server/caller_checks.h), validate, book every message in the byte
// ledger, and hand the work to the shared CoordinatorState; the round loop
// (server/coordinator.cc) does the rest. Register, TaskFeed and Heartbeat
// are in coordinator_service.cc, DownloadModel in coordinator_download.cc,
// UploadDelta in coordinator_upload.cc. Thread-safe: gRPC calls the
// handlers on many threads; all shared state is CoordinatorState's.
#ifndef SHEFL_SERVER_COORDINATOR_SERVICE_H_
#define SHEFL_SERVER_COORDINATOR_SERVICE_H_

#include "server/coordinator_state.h"
#include "server/stream_watchdog.h"
#include "shefl.grpc.pb.h"

namespace shefl {

class CoordinatorService final : public v1::Coordinator::Service {
 public:
  explicit CoordinatorService(CoordinatorState* state) : s_(state) {}

  grpc::Status Register(grpc::ServerContext* ctx,
                        const v1::RegisterRequest* req,
                        v1::RegisterReply* reply) override;
  grpc::Status TaskFeed(grpc::ServerContext* ctx,
                        const v1::TaskFeedRequest* req,
                        grpc::ServerWriter<v1::FeedMessage>* writer) override;
  grpc::Status DownloadModel(
      grpc::ServerContext* ctx, const v1::DownloadRequest* req,
      grpc::ServerWriter<v1::ModelChunk>* writer) override;
  grpc::Status UploadDelta(grpc::ServerContext* ctx,
                           grpc::ServerReader<v1::DeltaChunk>* reader,
                           v1::UploadReply* reply) override;
  grpc::Status Heartbeat(grpc::ServerContext* ctx,
                         const v1::HeartbeatRequest* req,
                         v1::HeartbeatReply* reply) override;

 private:
  // Books one message in the ledger and the byte metrics.
  void Book(int64_t round, int64_t client, int64_t model, Direction dir,
            Traffic kind, uint64_t bytes);
  // Reads, validates, decodes and buffers one upload; returns the round it
  // went into (which waits for the caller's Replied()). Adds the bytes it
  // read to `bytes_read`. The caller counts refusals.
  absl::StatusOr<std::shared_ptr<RoundState>> ReceiveUpload(
      grpc::ServerReader<v1::DeltaChunk>* reader, const v1::DeltaChunk& first,
      uint64_t* bytes_read);
  absl::StatusOr<std::string> ReadUploadBlob(
      grpc::ServerReader<v1::DeltaChunk>* reader, const v1::DeltaChunk& first,
      uint64_t* bytes_read);
  // Books a served download (`down`: the chunk bytes written).
  void BookDownload(const v1::DownloadRequest& req, uint64_t down);
  // Counts a refused RPC (by reason; an upload also as rejected or late),
  // logs it, and returns its gRPC status. Its bytes stay out of the ledger.
  grpc::Status Refuse(const std::string& rpc, const absl::Status& st,
                      uint64_t bytes, bool update = false);
  // "cert:<peer identity>" under mutual TLS, else "token" (or "anonymous"
  // when no token is asked for).
  std::string PeerIdentity(grpc::ServerContext* ctx) const;

  // When an upload or download stream opened now is cancelled: the open
  // round's deadline plus kStreamGrace (now plus it between rounds).
  StreamWatchdog::Clock::time_point StreamUntil() const;

  // Longest daemon name or device accepted, in bytes.
  static constexpr size_t kMaxNameBytes = 128;
  static constexpr std::chrono::seconds kStreamGrace{5};

  CoordinatorState* s_;
  StreamWatchdog watchdog_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_COORDINATOR_SERVICE_H_
