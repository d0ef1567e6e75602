// The plain source of a round's updates: each task's upload, which the
// gRPC handlers validate and add to the round's books as it arrives
// (server/rpc/coordinator_upload.cc). The round waits for them, and stops
// waiting for a client whose daemon has been gone clients.lost_after_s:
// a daemon that left for good costs the round its updates, not the rest
// of the deadline.
// Not thread-safe: the round loop's.
#ifndef SHEFL_SERVER_SOURCE_PLAIN_UPLOADS_H_
#define SHEFL_SERVER_SOURCE_PLAIN_UPLOADS_H_

#include "server/source/update_source.h"

namespace shefl {

class PlainUploads : public UpdateSource {
 public:
  PlainUploads(CoordinatorState* state, const LostDaemons* lost)
      : state_(state), lost_(lost) {}
  bool Gather(RoundState& rs) override;

 private:
  CoordinatorState* const state_;
  const LostDaemons* const lost_;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SOURCE_PLAIN_UPLOADS_H_
