#include "client/model_download.h"

#include <grpcpp/client_context.h>

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "common/net/accounting.h"
#include "common/net/grpc_status.h"

namespace shefl {

namespace {

// The weights as the chunks bring them, or !ok once a chunk breaks the
// rules. The coordinator's offsets and `total` are claims: the buffer never
// grows past what this daemon's model holds.
struct Assembly {
  std::vector<float> weights;
  bool ok = true;

  void Add(const v1::ModelChunk& chunk, uint64_t dim) {
    const size_t n = chunk.data().size() / sizeof(float);
    if (!ok || chunk.offset() != weights.size() ||
        chunk.data().size() % 4 != 0 || chunk.total() != dim ||
        weights.size() + n > dim) {
      ok = false;
      return;
    }
    if (weights.empty()) weights.reserve(dim);
    weights.resize(weights.size() + n);
    std::memcpy(weights.data() + weights.size() - n, chunk.data().data(),
                chunk.data().size());
  }
};

}  // namespace

absl::StatusOr<ModelDownloader::Weights> ModelDownloader::Fetch(
    const CoordinatorLink& link, const v1::Task& task,
    const v1::ModelTask& mt, const std::vector<int64_t>& also_for,
    uint64_t dim) const {
  const int64_t round = task.round(), client = task.client_id();
  const int64_t model = mt.model_id();
  v1::DownloadRequest req;
  req.set_session_id(link.session_id);
  req.set_round(round);
  req.set_client_id(client);
  req.set_model_id(model);
  req.set_model_version(mt.model_version());
  v1::DownloadRequest alone = req;  // what each client's own would be
  for (int64_t c : also_for) req.add_also_for_clients(c);
  grpc::ClientContext ctx;
  link.AddCallMetadata(&ctx);
  ctx.set_deadline(std::chrono::system_clock::time_point(
      std::chrono::milliseconds(task.deadline_unix_ms())));
  auto reader = link.stub->DownloadModel(&ctx, req);
  Assembly got;
  v1::ModelChunk chunk;
  uint64_t down = 0;
  while (reader->Read(&chunk)) {  // to the end, so the books stay whole
    down += WireSize(chunk);
    got.Add(chunk, dim);
  }
  // Booked only when the coordinator served it: a refused request is not
  // in its books either (it counts refusals apart).
  SHEFL_RETURN_IF_ERROR(FromGrpc(reader->Finish()));
  DownloadBytes b;
  b.physical_up = WireSize(req);
  b.physical_down = down;
  std::vector<int64_t> covered = also_for;
  covered.push_back(client);
  for (int64_t c : covered) {
    alone.set_client_id(c);
    books_->Book(round, c, model, Direction::kUp, Traffic::kControl,
                 WireSize(alone));
    books_->Book(round, c, model, Direction::kDown, Traffic::kPayload, down);
    b.logical_up += WireSize(alone);
    b.logical_down += down;
  }
  books_->BookDownload(round, b);
  if (!got.ok || got.weights.size() != dim)
    return absl::DataLossError(absl::StrCat("model ", model, ": got ",
                                            got.weights.size(), " of ",
                                            static_cast<int64_t>(dim),
                                            " weights"));
  return std::make_shared<const std::vector<float>>(std::move(got.weights));
}

}  // namespace shefl
