// The coordinator's book of model downloads, by round (rounds.jsonl's
// download_bytes_* fields). Thread-safe: the download handlers add, the
// round loop reads.
#ifndef SHEFL_SERVER_SHARED_DOWNLOAD_BOOK_H_
#define SHEFL_SERVER_SHARED_DOWNLOAD_BOOK_H_

#include <cstdint>
#include <map>

#include "common/core/mutex.h"

namespace shefl {

// Model downloads, by round: the bytes they count for the clients they
// served (logical: each client's own download, also in the ledger) and the
// bytes that crossed the wire (physical: a daemon fetches a version once
// for all its clients).
class DownloadBook {
 public:
  // Requests go up, chunks come down.
  struct Bytes {
    uint64_t logical_up = 0, logical_down = 0;
    uint64_t physical_up = 0, physical_down = 0;
    uint64_t logical() const { return logical_up + logical_down; }
    uint64_t physical() const { return physical_up + physical_down; }
    Bytes& operator+=(const Bytes& o) {
      logical_up += o.logical_up;
      logical_down += o.logical_down;
      physical_up += o.physical_up;
      physical_down += o.physical_down;
      return *this;
    }
  };
  void Add(int64_t round, const Bytes& b);
  Bytes Round(int64_t round) const;

 private:
  mutable Mutex mu_;
  std::map<int64_t, Bytes> by_round_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_SERVER_SHARED_DOWNLOAD_BOOK_H_
