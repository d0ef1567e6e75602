#include "client/round_books.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "common/core/resources.h"

namespace shefl {

void RoundBooks::Book(int64_t round, int64_t client, int64_t model,
                      Direction dir, Traffic kind, uint64_t bytes) {
  ledger_.Add(round, client, model, dir, kind, bytes);
  bytes_->Add({{"direction", dir == Direction::kUp ? "up" : "down"}})
      .Increment(static_cast<double>(bytes));
}

void RoundBooks::BookDownload(int64_t round, const DownloadBytes& b) {
  {
    MutexLock lock(mu_);
    DownloadBytes& sum = downloads_[round];
    sum.logical_up += b.logical_up;
    sum.logical_down += b.logical_down;
    sum.physical_up += b.physical_up;
    sum.physical_down += b.physical_down;
  }
  download_bytes_->Add({{"kind", "logical"}})
      .Increment(static_cast<double>(b.logical_up + b.logical_down));
  download_bytes_->Add({{"kind", "physical"}})
      .Increment(static_cast<double>(b.physical_up + b.physical_down));
}

void RoundBooks::AddTraining(int64_t round, double seconds, uint64_t samples) {
  MutexLock lock(mu_);
  train_seconds_[round] += seconds;
  train_samples_[round] += samples;
}

void RoundBooks::WriteRoundLine(int64_t round) {
  nlohmann::json clients = nlohmann::json::object();
  ByteCounts daemon, total;
  for (const auto& [client, b] : ledger_.ByClient(round)) {
    total += b;
    if (client == kDaemonTraffic)
      daemon = b;
    else
      clients[std::to_string(client)] = ToJson(b);
  }
  MutexLock lock(mu_);
  const DownloadBytes dl = downloads_[round];
  nlohmann::json line = {{"round", round},
                         {"daemon", daemon_},
                         {"bytes_up", total.payload_up},
                         {"bytes_down", total.payload_down},
                         {"control_bytes", total.control()},
                         {"train_seconds", train_seconds_[round]},
                         {"train_samples", train_samples_[round]},
                         {"download_bytes_logical", dl.logical_up + dl.logical_down},
                         {"download_bytes_physical", dl.physical_up + dl.physical_down},
                         {"downloads",
                          {{"logical", {{"up", dl.logical_up}, {"down", dl.logical_down}}},
                           {"physical", {{"up", dl.physical_up}, {"down", dl.physical_down}}}}},
                         {"peak_rss_bytes", PeakRssBytes()},
                         {"bytes_by_client", clients},
                         {"daemon_bytes", ToJson(daemon)}};
  train_seconds_.erase(train_seconds_.begin(), train_seconds_.upper_bound(round));
  train_samples_.erase(train_samples_.begin(), train_samples_.upper_bound(round));
  downloads_.erase(downloads_.begin(), downloads_.upper_bound(round));
  std::ofstream out(jsonl_, std::ios::app);
  out << line.dump() << "\n";
}

}  // namespace shefl
