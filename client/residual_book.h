// A daemon's error-feedback residuals, per (client, model), each tagged
// with the round whose upload left it. A residual is staged when its
// delta is compressed and is in force from then on, unless the coordinator
// refuses that upload (then the one before it is back in force). When the
// coordinator hands out a round again (it crashed and resumed from an
// earlier checkpoint), residuals of that round or later are dropped: the
// rerun starts from what was in force before, as the first run did, so a
// resumed run with error feedback reaches the same models as one that was
// never interrupted (the coordinator may go back one round past a round it
// has handed out, so the residual before the newest is kept). Residuals the coordinator accepted are written to the
// daemon's state folder, so a restarted daemon starts from them.
// Thread-safe: every method takes mu_.
#ifndef SHEFL_CLIENT_RESIDUAL_BOOK_H_
#define SHEFL_CLIENT_RESIDUAL_BOOK_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "common/core/mutex.h"

namespace shefl {

class ResidualBook {
 public:
  // `dir` empty: memory only. `fingerprint` names the run's settings;
  // files written under another fingerprint are not loaded.
  ResidualBook(std::string dir, uint64_t fingerprint)
      : dir_(std::move(dir)), fingerprint_(fingerprint) {}

  // Reads the committed residuals of `dir` (creating it if missing);
  // returns how many were loaded through *loaded.
  absl::Status Load(int* loaded);

  // The residual in force for a task of `round`, or an undefined tensor.
  // Drops the entries of `round` and later.
  at::Tensor InForce(int64_t client, int64_t model, int64_t round);

  // `residual` (on any device) is the one left by `round`'s upload.
  void Stage(int64_t client, int64_t model, int64_t round, at::Tensor residual);
  // The coordinator accepted `round`'s upload: written to the state folder.
  absl::Status Commit(int64_t client, int64_t model, int64_t round);
  // The coordinator refused it: the residual before it is back in force.
  void Discard(int64_t client, int64_t model, int64_t round);

  // The newest residual of (client, model), undefined if none (for tests).
  at::Tensor Newest(int64_t client, int64_t model) const;
  size_t size() const;  // (client, model) pairs with a residual

 private:
  using Key = std::pair<int64_t, int64_t>;
  std::string PathOf(const Key& key) const;

  const std::string dir_;
  const uint64_t fingerprint_;
  mutable Mutex mu_;
  // round -> residual
  std::map<Key, std::map<int64_t, at::Tensor>> book_ ABSL_GUARDED_BY(mu_);
};

// FNV-1a of `text`: the fingerprint of a run's config.
uint64_t Fingerprint(const std::string& text);

}  // namespace shefl

#endif  // SHEFL_CLIENT_RESIDUAL_BOOK_H_
