// The download of one model version from the coordinator: a server stream
// of chunks, fetched for one client and any others of this daemon that
// need the same version (ModelCache decides which), checked against the
// size of this daemon's model, and booked: each covered client's books get
// the download as if it had made its own (its own request, the same
// chunks: the logical bytes), the transfer itself is counted once as
// physical bytes.
// Thread-safe: no state of its own besides the books (thread-safe).
#ifndef SHEFL_CLIENT_MODEL_DOWNLOAD_H_
#define SHEFL_CLIENT_MODEL_DOWNLOAD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "client/coordinator_link.h"
#include "client/round_books.h"
#include "shefl.pb.h"

namespace shefl {

class ModelDownloader {
 public:
  using Weights = std::shared_ptr<const std::vector<float>>;
  explicit ModelDownloader(RoundBooks* books) : books_(books) {}

  // The weights of `mt` for task.client_id() and `also_for`, `dim` floats;
  // the task's deadline bounds the call.
  absl::StatusOr<Weights> Fetch(const CoordinatorLink& link,
                                const v1::Task& task, const v1::ModelTask& mt,
                                const std::vector<int64_t>& also_for,
                                uint64_t dim) const;

 private:
  RoundBooks* const books_;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_MODEL_DOWNLOAD_H_
