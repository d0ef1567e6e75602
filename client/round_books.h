// A daemon's books: every gRPC message it sends or receives, booked per
// round, logical client, model and direction (common/net/accounting.h) and
// counted in shefl_client_bytes_total; the model downloads (logical and
// physical bytes, shefl_client_download_bytes_total); the training time
// and samples of each round. WriteRoundLine turns one round's books into
// its line of <out>/<name>.jsonl and forgets that round and earlier ones.
// Thread-safe: the ledger has its own lock, the per-round sums are under
// mu_; the Prometheus counters are thread-safe.
#ifndef SHEFL_CLIENT_ROUND_BOOKS_H_
#define SHEFL_CLIENT_ROUND_BOOKS_H_

#include <prometheus/counter.h>
#include <prometheus/family.h>

#include <cstdint>
#include <map>
#include <string>

#include "common/core/mutex.h"
#include "common/net/accounting.h"

namespace shefl {

// A model transfer: the bytes it counts for the clients it served, and the
// bytes that crossed the wire (requests up, chunks down).
struct DownloadBytes {
  uint64_t logical_up = 0, logical_down = 0;
  uint64_t physical_up = 0, physical_down = 0;
};

class RoundBooks {
 public:
  // `jsonl`: the file the round lines are appended to; `daemon`: the
  // daemon's name in them. The counter families outlive the books.
  RoundBooks(std::string jsonl, std::string daemon,
             prometheus::Family<prometheus::Counter>* bytes,
             prometheus::Family<prometheus::Counter>* download_bytes)
      : jsonl_(std::move(jsonl)),
        daemon_(std::move(daemon)),
        bytes_(bytes),
        download_bytes_(download_bytes) {}

  void Book(int64_t round, int64_t client, int64_t model, Direction dir,
            Traffic kind, uint64_t bytes);
  void BookDownload(int64_t round, const DownloadBytes& b);
  // One model trained in `round`: its training time and samples trained
  // on (shard size x passes over it, or steps x batch size).
  void AddTraining(int64_t round, double seconds, uint64_t samples);

  // Appends `round`'s line and forgets the sums of it and earlier rounds.
  void WriteRoundLine(int64_t round);

 private:
  const std::string jsonl_;
  const std::string daemon_;
  prometheus::Family<prometheus::Counter>* const bytes_;
  prometheus::Family<prometheus::Counter>* const download_bytes_;
  ByteLedger ledger_;

  Mutex mu_;
  std::map<int64_t, double> train_seconds_ ABSL_GUARDED_BY(mu_);  // by round
  // Samples trained on, by round: the work done, to compare rounds that
  // sampled different clients.
  std::map<int64_t, uint64_t> train_samples_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, DownloadBytes> downloads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_CLIENT_ROUND_BOOKS_H_
