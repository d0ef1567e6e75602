// The model versions a daemon's logical clients need, each fetched once
// (docs/DESIGN.md, "Wire format and byte accounting"). Tasks announce what they will need
// when they arrive (Expect); the first client to start on a version
// fetches it on behalf of every client expected to need it, and the others
// take the same weights. The coordinator books each covered client's
// download as its own (logical bytes) and the one transfer apart
// (physical bytes), so the fetch names the clients it covers.
//
// Only the newest version of each model is kept: a task for an older one
// is stale and fetched on its own (the coordinator will refuse it).
// Thread-safe: every method takes mu_.
#ifndef SHEFL_CLIENT_MODEL_CACHE_H_
#define SHEFL_CLIENT_MODEL_CACHE_H_

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/mutex.h"

namespace shefl {

class ModelCache {
 public:
  using Weights = std::shared_ptr<const std::vector<float>>;
  // Downloads the version for the caller and for `also_for` (other clients
  // of this daemon that will need it).
  using Fetch = std::function<absl::StatusOr<Weights>(
      const std::vector<int64_t>& also_for)>;

  // A task of `client` will need (model, version).
  void Expect(int64_t model, uint64_t version, int64_t client);

  // The weights of (model, version) for `client`: those of the fetch that
  // covered it (waiting for it if it is under way), else a new fetch that
  // covers `client` and every expected client no fetch covered yet.
  absl::StatusOr<Weights> Get(int64_t model, uint64_t version, int64_t client,
                              const Fetch& fetch);

  // Forgets everything: a new session's coordinator (perhaps resumed from
  // a checkpoint) is asked afresh, and a fetch the old one failed is not
  // served again.
  void Clear();

  // How many fetches Get started (for tests and logs).
  int64_t fetches() const;

 private:
  using Result = std::shared_future<absl::StatusOr<Weights>>;
  struct Entry {
    uint64_t version = 0;
    std::set<int64_t> expected;
    std::map<int64_t, Result> covered;  // client -> the fetch that serves it
  };
  // The entry for `version`, reset when a newer version arrives; null for
  // an older one.
  Entry* EntryFor(int64_t model, uint64_t version) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::map<int64_t, Entry> by_model_ ABSL_GUARDED_BY(mu_);
  int64_t fetches_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_MODEL_CACHE_H_
