// The coordinator's M global models, each a flat fp32 vector with a
// version (the number of aggregations applied to it).
//
// A model is held as an immutable snapshot: downloads keep the snapshot
// they started with, and aggregation publishes a new one, so a download
// never sees a half-applied update and needs no lock while it streams.
// Thread-safe: every method takes mu_; snapshots are immutable.
#ifndef SHEFL_SERVER_RUN_MODEL_STORE_H_
#define SHEFL_SERVER_RUN_MODEL_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/core/mutex.h"

namespace shefl {

using ModelSnapshot = std::shared_ptr<const std::vector<float>>;

class ModelStore {
 public:
  explicit ModelStore(std::vector<std::vector<float>> models);

  int64_t num_models() const;
  uint64_t dim() const;
  ModelSnapshot Get(int64_t model) const;
  uint64_t Version(int64_t model) const;
  // Snapshot and version read together, so they always match.
  std::pair<ModelSnapshot, uint64_t> GetVersioned(int64_t model) const;

  // Replaces model `m` with `weights` and bumps its version.
  void Publish(int64_t model, std::vector<float> weights);

  // round.mode buffered: a task trains from the version it was handed,
  // and its download must still get that version after the model moved
  // on. Once called, Publish keeps the versions it replaces; those below
  // `oldest` (the oldest version a task in flight holds) are let go.
  void KeepFrom(int64_t model, uint64_t oldest);
  // `version` of `model`: the current snapshot or a kept one; null when
  // it is neither.
  ModelSnapshot GetVersion(int64_t model, uint64_t version) const;
  // Versions kept besides the current ones (for the metrics and tests).
  size_t kept_versions() const;

  // Hex SHA-256 of each model's flat little-endian fp32 bytes.
  std::vector<std::string> Digests() const;

  // Atomic checkpoint: write to a temp file, fsync, rename, fsync the dir.
  // Layout: magic "SHEFLCK1", round, M, d, versions[M], floats[M*d].
  absl::Status SaveCheckpoint(const std::string& path, int64_t round) const;
  // All models and their versions, read together.
  std::pair<std::vector<ModelSnapshot>, std::vector<uint64_t>> Snapshot() const;
  // The same checkpoint of given snapshots (taken when `round` closed, so
  // that a later round may publish meanwhile).
  static absl::Status SaveCheckpoint(const std::string& path, int64_t round,
                                     const std::vector<ModelSnapshot>& models,
                                     const std::vector<uint64_t>& versions);
  // Loads a checkpoint; returns the round it was taken after.
  static absl::StatusOr<std::pair<std::unique_ptr<ModelStore>, int64_t>> LoadCheckpoint(
      const std::string& path);

 private:
  mutable Mutex mu_;
  std::vector<ModelSnapshot> models_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> versions_ ABSL_GUARDED_BY(mu_);
  bool keep_ ABSL_GUARDED_BY(mu_) = false;
  // KeepFrom: per model, version -> snapshot replaced by a later Publish.
  std::vector<std::map<uint64_t, ModelSnapshot>> kept_ ABSL_GUARDED_BY(mu_);
};

std::string Sha256Hex(const void* data, size_t size);

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_MODEL_STORE_H_
