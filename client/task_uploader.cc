#include "client/task_uploader.h"

#include <grpcpp/client_context.h>

#include <chrono>

#include "common/core/status_macros.h"
#include "common/net/accounting.h"
#include "common/net/grpc_status.h"
#include "common/net/wire.h"

namespace shefl {

absl::Status TaskUploader::Upload(const CoordinatorLink& link,
                                  const v1::Task& task,
                                  const v1::ModelTask& mt,
                                  const TrainedUpdate& u) const {
  const int64_t round = task.round(), client = task.client_id();
  const int64_t model = mt.model_id();
  v1::UploadHeader h;
  h.set_session_id(link.session_id);
  h.set_round(round);
  h.set_client_id(client);
  h.set_model_id(model);
  h.set_model_version(mt.model_version());
  h.set_encoded_size(u.encoded.size());
  h.set_num_samples(u.num_samples);
  h.set_train_loss(u.train_loss);
  grpc::ClientContext ctx;
  link.AddCallMetadata(&ctx);
  ctx.set_deadline(std::chrono::system_clock::time_point(
      std::chrono::milliseconds(task.deadline_unix_ms())));
  v1::UploadReply reply;
  auto writer = link.stub->UploadDelta(&ctx, &reply);
  uint64_t up = 0;
  for (const v1::DeltaChunk& chunk : MakeUploadChunks(h, u.encoded)) {
    if (!writer->Write(chunk)) break;
    up += WireSize(chunk);
  }
  writer->WritesDone();
  SHEFL_RETURN_IF_ERROR(FromGrpc(writer->Finish()));
  books_->Book(round, client, model, Direction::kUp, Traffic::kPayload, up);
  books_->Book(round, client, model, Direction::kDown, Traffic::kControl,
               WireSize(reply));
  return absl::OkStatus();
}

bool TaskUploader::Settles(const absl::Status& sent) {
  switch (sent.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kAborted:
      return false;
    default:
      return true;
  }
}

}  // namespace shefl
