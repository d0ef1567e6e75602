#include "server/rpc/call_limits.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "server/state/round_state.h"

namespace shefl {

CallLimits::Slot::Slot(Slot&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)),
      host_(std::move(other.host_)),
      identity_(std::move(other.identity_)) {}

CallLimits::Slot::~Slot() {
  if (owner_) owner_->Leave(host_, identity_);
}

std::string CallLimits::HostOf(std::string_view peer) {
  // The port is after the last ':'; an IPv6 address keeps its brackets.
  const size_t colon = peer.rfind(':');
  const size_t bracket = peer.rfind(']');
  if (colon == std::string_view::npos || colon < peer.find(':') + 1 ||
      (bracket != std::string_view::npos && colon < bracket))
    return std::string(peer);
  return std::string(peer.substr(0, colon));
}

absl::StatusOr<CallLimits::Slot> CallLimits::Enter(std::string_view peer,
                                                   const std::string& identity) {
  std::string host = HostOf(peer);
  // The shared token and no token name nobody: bounded by host alone.
  const bool someone = absl::StartsWith(identity, "cert:") ||
                       absl::StartsWith(identity, "token:");
  std::string who = someone ? identity : std::string();
  MutexLock lock(mu_);
  int& from_host = hosts_[host];
  if (from_host >= per_host_) {
    if (from_host == 0) hosts_.erase(host);
    return WithReason(absl::ResourceExhaustedError(absl::StrCat(
                          per_host_, " calls already open from ", host,
                          "; try again when some have ended")),
                      "busy");
  }
  if (!who.empty()) {
    int& by_identity = identities_[who];
    if (by_identity >= per_identity_) {
      if (by_identity == 0) identities_.erase(who);
      if (from_host == 0) hosts_.erase(host);
      return WithReason(absl::ResourceExhaustedError(absl::StrCat(
                            per_identity_, " calls already open by ", who,
                            "; try again when some have ended")),
                        "busy");
    }
    ++by_identity;
  }
  ++from_host;
  return Slot(this, std::move(host), std::move(who));
}

void CallLimits::Leave(const std::string& host, const std::string& identity) {
  MutexLock lock(mu_);
  if (auto it = hosts_.find(host); it != hosts_.end() && --it->second <= 0)
    hosts_.erase(it);
  if (identity.empty()) return;
  if (auto it = identities_.find(identity);
      it != identities_.end() && --it->second <= 0)
    identities_.erase(it);
}

int CallLimits::OpenFromHost(std::string_view peer) const {
  MutexLock lock(mu_);
  auto it = hosts_.find(HostOf(peer));
  return it == hosts_.end() ? 0 : it->second;
}

}  // namespace shefl
