#include "fuzz/registry_model.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fuzz/fuzz_check.h"

namespace shefl {

bool RegistryModel::Snapshot::operator==(const Snapshot& o) const {
  return sessions == o.sessions && owners == o.owners &&
         shard_sizes == o.shard_sizes && closed == o.closed &&
         connected == o.connected;
}

RegistryModel::Snapshot RegistryModel::Observe() const {
  Snapshot s;
  for (const auto& d : registry_->Sessions())
    s.sessions.push_back(absl::StrCat(d->name, "|", d->session_id, "|",
                                      d->identity, "|", d->device, "|",
                                      absl::StrJoin(d->clients, ","), "|",
                                      d->feed_open));
  for (int64_t c = -1; c <= n_; ++c) {
    auto owner = registry_->OwnerOf(c);
    s.owners.push_back(owner ? owner->session_id : "");
    s.shard_sizes.push_back(reports_.ShardSize(c));
  }
  for (const auto& h : handles_) s.closed.push_back(h->feed.closed());
  s.connected = registry_->ConnectedClients();
  return s;
}

std::set<absl::StatusCode> RegistryModel::RegisterRefusals(
    const v1::RegisterRequest& req, const std::string& identity) const {
  std::set<absl::StatusCode> why;
  std::set<int64_t> ids;
  for (const auto& c : req.clients()) {
    const int64_t id = c.client_id();
    if (id < 0 || id >= n_ || !ids.insert(id).second)
      why.insert(absl::StatusCode::kInvalidArgument);
  }
  if (req.daemon_name().empty() || ids.empty())
    why.insert(absl::StatusCode::kInvalidArgument);
  // The request's shape is checked before anything the registry holds.
  if (!why.empty()) return why;
  if (auto named = name_identity_.find(req.daemon_name());
      named != name_identity_.end() && named->second != identity)
    why.insert(absl::StatusCode::kPermissionDenied);
  for (int64_t id : ids) {
    auto first = client_identity_.find(id);
    if (first != client_identity_.end() && first->second != identity)
      why.insert(absl::StatusCode::kPermissionDenied);
    auto owner = registry_->OwnerOf(id);
    if (owner && owner->name != req.daemon_name() && owner->feed_open)
      why.insert(absl::StatusCode::kAlreadyExists);
  }
  return why;
}

void RegistryModel::Register(const v1::RegisterRequest& req,
                             const std::string& identity) {
  const Snapshot before = Observe();
  const auto why = RegisterRefusals(req, identity);
  auto session = registry_->Register(req, identity);
  if (!session.ok()) {
    FUZZ_CHECK(why.count(session.status().code()) == 1);
    FUZZ_CHECK(!why.count(absl::StatusCode::kInvalidArgument) ||
               session.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(Observe() == before);  // a refused call changes nothing
    return;
  }
  FUZZ_CHECK(why.empty());
  FUZZ_CHECK((*session)->identity == identity);
  CheckRegistered(**session, req, before);
  handles_.push_back(*session);
  for (int64_t id : (*session)->clients) client_identity_.emplace(id, identity);
  name_identity_.emplace(req.daemon_name(), identity);
}

void RegistryModel::CheckRegistered(const DaemonSession& s,
                                    const v1::RegisterRequest& req,
                                    const Snapshot& before) const {
  FUZZ_CHECK(s.session_id.size() == 32);  // 128 bits, hex
  FUZZ_CHECK(s.session_id.find_first_not_of("0123456789abcdef") ==
             std::string::npos);
  FUZZ_CHECK(s.name == req.daemon_name() && s.device == req.device());
  std::vector<int64_t> ids;
  for (const auto& c : req.clients()) ids.push_back(c.client_id());
  std::sort(ids.begin(), ids.end());
  FUZZ_CHECK(s.clients == ids);
  FUZZ_CHECK(registry_->BySession(s.session_id).get() == &s);
  FUZZ_CHECK(!s.feed_open && !s.feed.closed());
  for (size_t i = 0; i < handles_.size(); ++i) {
    const DaemonSession& old = *handles_[i];
    FUZZ_CHECK(old.session_id != s.session_id);
    bool shares = old.name == s.name;
    for (int64_t id : old.clients) shares |= s.Hosts(id);
    const bool was_live = !before.closed[i];
    const bool live = registry_->BySession(old.session_id) != nullptr;
    // A session sharing the name or a client is replaced; others stay.
    FUZZ_CHECK(live == (was_live && !shares));
    FUZZ_CHECK(old.feed.closed() == !live);
  }
}

void RegistryModel::ReportShardSize(size_t handle, int64_t client,
                                    uint64_t num_samples) {
  if (handles_.empty()) return;
  const DaemonSession& s = *handles_[handle % handles_.size()];
  auto code = absl::StatusCode::kOk;
  auto first = shard_size_.find(client);
  if (!s.Hosts(client))
    code = absl::StatusCode::kPermissionDenied;
  else if (num_samples < 1 || num_samples > ClientReports::kMaxShardSize)
    code = absl::StatusCode::kInvalidArgument;
  else if (first != shard_size_.end() && first->second != num_samples)
    code = absl::StatusCode::kFailedPrecondition;
  const Snapshot before = Observe();
  const absl::Status st = reports_.ReportShardSize(s, client, num_samples);
  FUZZ_CHECK(st.code() == code);
  if (st.ok()) {
    shard_size_.emplace(client, num_samples);
  } else {
    FUZZ_CHECK(Observe() == before);
  }
}

void RegistryModel::SetFeedOpen(size_t handle, bool open) {
  if (handles_.empty()) return;
  const auto& s = handles_[handle % handles_.size()];
  registry_->SetFeedOpen(s, open);
  FUZZ_CHECK(s->feed_open == open);
}

void RegistryModel::CheckInvariants() const {
  const auto live = registry_->Sessions();
  std::set<std::string> names;
  int64_t hosted = 0, connected = 0;
  for (const auto& s : live) {
    FUZZ_CHECK(names.insert(s->name).second);
    FUZZ_CHECK(registry_->BySession(s->session_id) == s);
    FUZZ_CHECK(!s->feed.closed());
    FUZZ_CHECK(!s->clients.empty());
    for (size_t i = 0; i < s->clients.size(); ++i) {
      const int64_t c = s->clients[i];
      FUZZ_CHECK(c >= 0 && c < n_);
      FUZZ_CHECK(i == 0 || c > s->clients[i - 1]);
      // Owned by this session alone, and by the identity that came first.
      FUZZ_CHECK(registry_->OwnerOf(c) == s);
      FUZZ_CHECK(client_identity_.at(c) == s->identity);
      FUZZ_CHECK(registry_->IsConnected(c) == s->feed_open);
    }
    hosted += static_cast<int64_t>(s->clients.size());
    if (s->feed_open) connected += static_cast<int64_t>(s->clients.size());
  }
  int64_t owned = 0;
  for (int64_t c = -1; c <= n_; ++c) {
    if (auto owner = registry_->OwnerOf(c)) {
      ++owned;
      FUZZ_CHECK(std::find(live.begin(), live.end(), owner) != live.end());
    }
    auto size = shard_size_.find(c);
    FUZZ_CHECK(reports_.ShardSize(c) ==
               (size == shard_size_.end() ? 1.0 : double(size->second)));
  }
  FUZZ_CHECK(owned == hosted);
  FUZZ_CHECK(registry_->ConnectedClients() == connected);
  FUZZ_CHECK(registry_->AllConnected() == (connected == n_));
  // A replaced session is unreachable and its feed closed.
  for (const auto& h : handles_) {
    const bool is_live = std::find(live.begin(), live.end(), h) != live.end();
    FUZZ_CHECK((registry_->BySession(h->session_id) == h) == is_live);
    FUZZ_CHECK(h->feed.closed() == !is_live);
  }
}

}  // namespace shefl
