#include "server/state/client_registry.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/core/log.h"
#include "common/core/mutex.h"
#include "common/core/status_macros.h"

namespace shefl {

namespace {

// 128 bits from OpenSSL's generator, hex: a session id is the daemon's
// bearer credential for every later RPC, so it must not be guessable.
std::string NewSessionId() {
  unsigned char raw[16];
  if (RAND_bytes(raw, sizeof raw) != 1) {
    // Only when the OS has no entropy to give; refuse to make a weak id.
    std::fprintf(stderr, "fatal: RAND_bytes failed\n");
    std::abort();
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(raw), sizeof raw));
}

}  // namespace

ClientRegistry::ClientRegistry(int64_t num_clients)
    : num_clients_(num_clients),
      by_client_(static_cast<size_t>(std::max<int64_t>(num_clients, 0))),
      client_owner_(static_cast<size_t>(std::max<int64_t>(num_clients, 0)),
                    -1) {}

int32_t ClientRegistry::InternLocked(const std::string& identity) {
  auto [it, fresh] = identity_index_.emplace(
      identity, static_cast<int32_t>(identities_.size()));
  if (fresh) identities_.push_back(identity);
  return it->second;
}

bool ClientRegistry::OwnedByOrFreeLocked(int64_t id,
                                         const std::string& identity) const {
  const int32_t owner = client_owner_[id];
  return owner < 0 || identities_[owner] == identity;
}

std::shared_ptr<DaemonSession> ClientRegistry::HostLocked(int64_t id) const {
  if (id < 0 || id >= num_clients_) return nullptr;
  return by_client_[id];
}

bool DaemonSession::Hosts(int64_t client) const {
  return std::binary_search(clients.begin(), clients.end(), client);
}

absl::StatusOr<std::shared_ptr<DaemonSession>> ClientRegistry::Register(
    const v1::RegisterRequest& req, const std::string& identity) {
  if (req.daemon_name().empty())
    return absl::InvalidArgumentError("register: daemon_name is empty");
  const bool pick = req.clients().empty() && req.auto_clients() > 0;
  if (req.clients().empty() && !pick)
    return absl::InvalidArgumentError(absl::StrCat(
        "register: daemon '", LogSafe(req.daemon_name()), "' hosts no clients"));
  auto s = std::make_shared<DaemonSession>();
  s->name = req.daemon_name();
  s->identity = identity;
  s->device = req.device();
  for (const auto& c : req.clients()) {
    const int64_t id = c.client_id();
    if (id < 0 || id >= num_clients_)
      return absl::InvalidArgumentError(absl::StrCat(
          "register: client id ", id, " is out of range [0, ", num_clients_, ")"));
    s->clients.push_back(id);
  }
  std::sort(s->clients.begin(), s->clients.end());
  if (auto dup = std::adjacent_find(s->clients.begin(), s->clients.end());
      dup != s->clients.end())
    return absl::InvalidArgumentError(
        absl::StrCat("register: client id ", *dup, " listed twice"));

  MutexLock lock(mu_);
  if (pick) {  // chosen and claimed under one lock: no two daemons get an id
    SHEFL_ASSIGN_OR_RETURN(s->clients,
                           PickLocked(s->name, identity, req.auto_clients()));
  }
  SHEFL_RETURN_IF_ERROR(CheckClaims(*s));
  do s->session_id = NewSessionId();
  while (by_session_.count(s->session_id));
  if (auto old = by_name_.find(s->name); old != by_name_.end())
    Drop(old->second);
  for (int64_t id : s->clients)
    if (by_client_[id] != nullptr) Drop(by_client_[id]);
  by_name_[s->name] = s;
  name_identity_.emplace(s->name, identity);
  by_session_[s->session_id] = s;
  const int32_t who = InternLocked(identity);
  for (int64_t id : s->clients) {
    by_client_[id] = s;
    if (client_owner_[id] < 0) client_owner_[id] = who;
  }
  return s;
}

absl::StatusOr<std::vector<int64_t>> ClientRegistry::PickLocked(
    const std::string& name, const std::string& identity, uint32_t n) const {
  // A daemon back under its name (a restarted container) gets its clients
  // again: its data and error-feedback residuals are theirs.
  if (auto old = by_name_.find(name);
      old != by_name_.end() && old->second->identity == identity)
    return old->second->clients;
  std::vector<int64_t> ids;
  auto mine = [&](int64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return OwnedByOrFreeLocked(id, identity);
  };
  for (int64_t id = 0; id < num_clients_ && ids.size() < n; ++id)
    if (by_client_[id] == nullptr && mine(id)) ids.push_back(id);
  for (int64_t id = 0; id < num_clients_ && ids.size() < n; ++id) {
    const auto& held = by_client_[id];
    if (held != nullptr && held->feed_was_open && !held->feed_open &&
        held->identity == identity && mine(id))
      ids.push_back(id);
  }
  std::sort(ids.begin(), ids.end());
  if (ids.size() < n)
    return absl::ResourceExhaustedError(absl::StrCat(
        "register: daemon '", LogSafe(name), "' asked for ", n,
        " clients, only ", ids.size(), " are free"));
  return ids;
}

absl::Status ClientRegistry::CheckClaims(const DaemonSession& s) const {
  if (auto owner = name_identity_.find(s.name);
      owner != name_identity_.end() && owner->second != s.identity)
    return absl::PermissionDeniedError(absl::StrCat(
        "register: daemon name '", LogSafe(s.name),
        "' belongs to another identity"));
  for (int64_t id : s.clients) {
    if (!OwnedByOrFreeLocked(id, s.identity))
      return absl::PermissionDeniedError(absl::StrCat(
          "register: client ", id, " belongs to another identity"));
    const auto& host = by_client_[id];
    if (host != nullptr && host->name != s.name && host->feed_open)
      return absl::AlreadyExistsError(absl::StrCat(
          "register: client ", id, " is already hosted by daemon '",
          LogSafe(host->name), "'"));
  }
  return absl::OkStatus();
}

// The old session loses everything: its feed ends (the daemon behind it, if
// any, reconnects and is then refused or re-registers) and its ids go.
// `old` is a copy: callers pass by_name_'s or by_client_'s entry, which is
// erased below, and a reference to it would dangle (found by the registry
// fuzzer: a daemon re-registering under its name read freed memory).
void ClientRegistry::Drop(std::shared_ptr<DaemonSession> old) {
  old->feed.Close();
  by_session_.erase(old->session_id);
  if (auto it = by_name_.find(old->name);
      it != by_name_.end() && it->second == old)
    by_name_.erase(it);
  for (int64_t id : old->clients)
    if (by_client_[id] == old) by_client_[id] = nullptr;
}

ClientRegistry::Ownership ClientRegistry::GetOwnership() const {
  MutexLock lock(mu_);
  return {identities_, client_owner_, name_identity_};
}

void ClientRegistry::RestoreOwnership(Ownership o) {
  MutexLock lock(mu_);
  std::vector<int32_t> index;  // o's identity i is ours index[i]
  for (const std::string& who : o.identities) index.push_back(InternLocked(who));
  const int64_t n = std::min<int64_t>(num_clients_, o.client_owner.size());
  for (int64_t id = 0; id < n; ++id) {
    const int32_t i = o.client_owner[id];
    if (i >= 0 && i < static_cast<int32_t>(index.size()))
      client_owner_[id] = index[i];
  }
  for (auto& [name, who] : o.names) name_identity_[name] = std::move(who);
}

std::shared_ptr<DaemonSession> ClientRegistry::BySession(
    const std::string& id) const {
  MutexLock lock(mu_);
  auto it = by_session_.find(id);
  return it == by_session_.end() ? nullptr : it->second;
}

std::shared_ptr<DaemonSession> ClientRegistry::OwnerOf(int64_t client) const {
  MutexLock lock(mu_);
  return HostLocked(client);
}

void ClientRegistry::SetFeedOpen(const std::shared_ptr<DaemonSession>& s,
                                 bool open) {
  MutexLock lock(mu_);
  if (s->feed_open != open) s->feed_changed = std::chrono::steady_clock::now();
  s->feed_open = open;
  s->feed_was_open = s->feed_was_open || open;
}

int64_t ClientRegistry::ConnectedClients() const {
  MutexLock lock(mu_);
  // A session in the registry holds every one of its clients (a client
  // registered again drops its old session whole), so this counts each
  // client once, in O(daemons).
  int64_t n = 0;
  for (const auto& [id, s] : by_session_)
    n += s->feed_open ? static_cast<int64_t>(s->clients.size()) : 0;
  return n;
}

bool ClientRegistry::IsConnected(int64_t client) const {
  MutexLock lock(mu_);
  const auto host = HostLocked(client);
  return host != nullptr && host->feed_open;
}

bool ClientRegistry::AllConnected() const {
  return ConnectedClients() == num_clients_;
}

std::vector<std::shared_ptr<DaemonSession>> ClientRegistry::Sessions() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<DaemonSession>> out;
  for (const auto& [name, s] : by_name_) out.push_back(s);
  return out;
}

namespace {
double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}
}  // namespace

int64_t ClientRegistry::Missing::clients() const {
  int64_t n = unhosted;
  for (const MissingDaemon& d : daemons)
    n += static_cast<int64_t>(d.clients.size());
  return n;
}

double ClientRegistry::Missing::shortest_silence_s() const {
  double s = unhosted > 0 ? unhosted_silent_s : -1;
  for (const MissingDaemon& d : daemons)
    s = s < 0 ? d.silent_s : std::min(s, d.silent_s);
  return std::max(s, 0.0);
}

ClientRegistry::Missing ClientRegistry::MissingNow(bool with_clients) const {
  MutexLock lock(mu_);
  Missing out;
  int64_t hosted = 0;
  for (const auto& [name, s] : by_name_) {
    hosted += static_cast<int64_t>(s->clients.size());
    if (!s->feed_open)
      out.daemons.push_back({name, with_clients ? s->clients : std::vector<int64_t>{},
                             SecondsSince(s->feed_changed), s->feed_was_open});
  }
  out.unhosted = num_clients_ - hosted;
  out.unhosted_silent_s = SecondsSince(created_);
  return out;
}

double ClientRegistry::SilentSeconds(int64_t client) const {
  MutexLock lock(mu_);
  const auto host = HostLocked(client);
  if (host == nullptr) return SecondsSince(created_);
  return host->feed_open ? -1 : SecondsSince(host->feed_changed);
}

}  // namespace shefl
