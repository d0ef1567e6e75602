// The upload of one trained model: the compressed delta cut into chunks
// (common/net/wire.h), the first carrying the header, on one client
// stream bounded by the task's deadline; booked (payload up, the reply
// down) only when the coordinator accepts it, as it books only what it
// accepts. An upload is sent once, never retried: the coordinator's answer
// settles the error-feedback residual the upload left (Settles).
// Thread-safe: no state of its own besides the books (thread-safe).
#ifndef SHEFL_CLIENT_TASK_UPLOADER_H_
#define SHEFL_CLIENT_TASK_UPLOADER_H_

#include "absl/status/status.h"
#include "client/coordinator_link.h"
#include "client/local_trainer.h"
#include "client/round_books.h"
#include "shefl.pb.h"

namespace shefl {

class TaskUploader {
 public:
  explicit TaskUploader(RoundBooks* books) : books_(books) {}

  // OK: the coordinator accepted the update.
  absl::Status Upload(const CoordinatorLink& link, const v1::Task& task,
                      const v1::ModelTask& mt, const TrainedUpdate& u) const;

  // Whether the outcome of Upload is the coordinator's answer (accepted
  // or refused) and so settles the residual. When the answer never came
  // (the connection or the coordinator went away) the residual stays in
  // force: had the coordinator accepted it and gone on, it is right; had
  // it not, it hands the round out again, which drops it
  // (client/residual_book.h).
  static bool Settles(const absl::Status& sent);

 private:
  RoundBooks* const books_;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_TASK_UPLOADER_H_
