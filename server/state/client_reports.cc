#include "server/state/client_reports.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"

namespace shefl {

absl::Status ClientReports::ReportShardSize(const DaemonSession& s,
                                             int64_t client,
                                             uint64_t num_samples) {
  if (!s.Hosts(client))
    return absl::PermissionDeniedError(absl::StrCat(
        "daemon '", LogSafe(s.name), "' does not host client ", client));
  if (num_samples < 1 || num_samples > kMaxShardSize)
    return absl::InvalidArgumentError(absl::StrCat(
        "client ", client, ": shard size ", num_samples, " outside [1, ",
        kMaxShardSize, "]"));
  MutexLock lock(mu_);
  auto [it, fresh] = shard_size_.emplace(client, num_samples);
  shard_bound_stale_ = shard_bound_stale_ || fresh;
  if (!fresh && it->second != num_samples)
    return absl::FailedPreconditionError(absl::StrCat(
        "client ", client, ": shard size ", num_samples,
        " differs from the ", it->second, " reported first (kept)"));
  return absl::OkStatus();
}

absl::Status ClientReports::ReportClientInfo(
    const DaemonSession& s, int64_t client,
    const std::vector<uint64_t>& label_counts, uint32_t capacity,
    uint64_t label_bytes) {
  if (!s.Hosts(client))
    return absl::PermissionDeniedError(absl::StrCat(
        "daemon '", LogSafe(s.name), "' does not host client ", client));
  if (capacity > 1024)
    return absl::InvalidArgumentError(absl::StrCat(
        "client ", client, ": declared capacity ", capacity, " above 1024"));
  if (label_counts.size() > kMaxClasses)
    return absl::InvalidArgumentError(absl::StrCat(
        "client ", client, ": ", label_counts.size(), " label counts (at most ",
        kMaxClasses, ")"));
  MutexLock lock(mu_);
  label_bytes_[client] += label_bytes;
  if (capacity > 0) capacity_.emplace(client, capacity);
  if (label_counts.empty()) return absl::OkStatus();
  uint64_t total = 0;
  for (uint64_t c : label_counts) {
    if (c > kMaxShardSize) total = kMaxShardSize + 1;
    else total += c;
  }
  auto size = shard_size_.find(client);
  if (size == shard_size_.end() || size->second != total)
    return absl::InvalidArgumentError(absl::StrCat(
        "client ", client, ": label counts add up to ", total,
        ", not to its shard size ",
        size == shard_size_.end() ? std::string("(none reported)")
                                  : std::to_string(size->second),
        " (ignored)"));
  label_counts_.emplace(client, label_counts);
  return absl::OkStatus();
}

std::map<int64_t, std::vector<uint64_t>> ClientReports::LabelCounts() const {
  MutexLock lock(mu_);
  return label_counts_;
}

std::map<int64_t, uint64_t> ClientReports::ShardSizes() const {
  MutexLock lock(mu_);
  std::map<int64_t, uint64_t> out;
  for (const auto& [id, claim] : shard_size_)
    out.emplace(id, BoundedLocked(claim));
  return out;
}

void ClientReports::SetShardMultiple(double multiple) {
  MutexLock lock(mu_);
  shard_multiple_ = multiple;
  shard_bound_stale_ = true;
}

uint64_t ClientReports::BoundedLocked(uint64_t claim) const {
  if (shard_multiple_ <= 0 || shard_size_.empty()) return claim;
  if (shard_bound_stale_) {
    std::vector<uint64_t> claims;
    claims.reserve(shard_size_.size());
    for (const auto& [id, c] : shard_size_) claims.push_back(c);
    // The lower median: with two claims, one of them cannot raise it.
    auto mid = claims.begin() + (claims.size() - 1) / 2;
    std::nth_element(claims.begin(), mid, claims.end());
    shard_bound_ = std::max(1.0, shard_multiple_ * static_cast<double>(*mid));
    shard_bound_stale_ = false;
  }
  return static_cast<double>(claim) > shard_bound_
             ? static_cast<uint64_t>(shard_bound_)
             : claim;
}

int64_t ClientReports::ShardsBounded() const {
  MutexLock lock(mu_);
  int64_t n = 0;
  for (const auto& [id, claim] : shard_size_)
    n += BoundedLocked(claim) != claim;
  return n;
}

uint32_t ClientReports::DeclaredCapacity(int64_t client) const {
  MutexLock lock(mu_);
  auto it = capacity_.find(client);
  return it == capacity_.end() ? 0 : it->second;
}

std::map<int64_t, uint64_t> ClientReports::LabelBytes() const {
  MutexLock lock(mu_);
  return label_bytes_;
}

double ClientReports::ShardSize(int64_t client) const {
  MutexLock lock(mu_);
  auto it = shard_size_.find(client);
  if (it == shard_size_.end()) return 1.0;
  return static_cast<double>(
      BoundedLocked(it->second));
}

}  // namespace shefl
