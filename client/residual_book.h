// A daemon's error-feedback residuals, per (client, model), each tagged
// with the round whose upload left it. A residual is staged when its
// delta is compressed and is in force from then on, unless the coordinator
// refuses that upload (then the one before it is back in force). When the
// coordinator hands out a round again (it crashed and resumed from an
// earlier checkpoint), residuals of that round or later are dropped: the
// rerun starts from what was in force before, as the first run did, so a
// resumed run with error feedback reaches the same models as one that was
// never interrupted (the coordinator may go back one round past a round it
// has handed out, so the residual before the newest is kept).
//
// On disk (when a folder is given) every staged residual is written, one
// file per (client, model, round), before its upload is sent, and the
// three newest rounds of each pair are kept; a refused one is removed.
// So a daemon killed with its coordinator restarts with the residuals the
// memory held, and the rerun of the rounds the coordinator lost starts
// from the same one as the first run did. Files are named by client, not
// by daemon: daemons that share the folder (`shefl run` gives them one)
// can host other clients after a restart and still find theirs.
// Thread-safe: every method takes mu_.
#ifndef SHEFL_CLIENT_RESIDUAL_BOOK_H_
#define SHEFL_CLIENT_RESIDUAL_BOOK_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "common/core/mutex.h"

namespace shefl {

class ResidualBook {
 public:
  // `dir` empty: memory only. `fingerprint` names the run's settings;
  // files written under another fingerprint are not loaded.
  ResidualBook(std::string dir, uint64_t fingerprint)
      : dir_(std::move(dir)), fingerprint_(fingerprint) {}

  // Reads the residuals of `dir` (creating it if missing) of the clients
  // in `clients` (every client when empty); returns through *loaded how
  // many (client, model) pairs have one.
  absl::Status Load(int* loaded, const std::set<int64_t>& clients = {});

  // The residual in force for a task of `round`, or an undefined tensor.
  // Drops the entries of `round` and later.
  at::Tensor InForce(int64_t client, int64_t model, int64_t round);

  // `residual` (on any device) is the one left by `round`'s upload; it is
  // on disk when this returns OK (call it before the upload is sent).
  absl::Status Stage(int64_t client, int64_t model, int64_t round,
                     at::Tensor residual);
  // The coordinator accepted `round`'s upload (NotFound if nothing staged).
  absl::Status Commit(int64_t client, int64_t model, int64_t round);
  // The coordinator refused it: the residual before it is back in force.
  void Discard(int64_t client, int64_t model, int64_t round);

  // The newest residual of (client, model), undefined if none (for tests).
  at::Tensor Newest(int64_t client, int64_t model) const;
  size_t size() const;  // (client, model) pairs with a residual

 private:
  using Key = std::pair<int64_t, int64_t>;
  std::string PathOf(const Key& key, int64_t round) const;
  // Removes the file of (key, round) if there is one.
  void RemoveFile(const Key& key, int64_t round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const uint64_t fingerprint_;
  mutable Mutex mu_;
  // round -> residual
  std::map<Key, std::map<int64_t, at::Tensor>> book_ ABSL_GUARDED_BY(mu_);
  // The rounds with a file on disk, per pair.
  std::map<Key, std::set<int64_t>> files_ ABSL_GUARDED_BY(mu_);
};

// FNV-1a of `text`: the fingerprint of a run's config.
uint64_t Fingerprint(const std::string& text);

}  // namespace shefl

#endif  // SHEFL_CLIENT_RESIDUAL_BOOK_H_
