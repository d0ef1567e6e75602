#include "server/shared/download_book.h"

namespace shefl {

void DownloadBook::Add(int64_t round, const Bytes& b) {
  MutexLock lock(mu_);
  by_round_[round] += b;
}

DownloadBook::Bytes DownloadBook::Round(int64_t round) const {
  MutexLock lock(mu_);
  auto it = by_round_.find(round);
  return it == by_round_.end() ? Bytes{} : it->second;
}

}  // namespace shefl
