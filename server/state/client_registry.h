// The daemons that registered and the logical clients each one hosts: the
// sessions, their feeds and who owns which name and client. What the
// clients report of themselves once registered (shard sizes, label
// counts, capacity) is server/state/client_reports.h's.
//
// Identity (docs/DESIGN.md, "Trust and faults"): a daemon is its TLS client certificate
// (mutual TLS) or, without one, the deployment's token; the service passes
// it in. A name is re-registered only by the identity that first held it
// (after a reconnect or a restart: its old session is replaced and its old
// feed closed). A client id belongs to the identity that first registered
// it: another daemon of that identity may take it over only while its
// current host has no open feed (a daemon restarted under a new name);
// another identity never.
// Thread-safe: ClientRegistry (and each session's FeedQueue) take their own mutex in every
// method (guarded fields checked by clang).
#ifndef SHEFL_SERVER_STATE_CLIENT_REGISTRY_H_
#define SHEFL_SERVER_STATE_CLIENT_REGISTRY_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/mutex.h"
#include "server/state/feed_queue.h"
#include "shefl.pb.h"

namespace shefl {

struct DaemonSession {
  std::string session_id;  // 128 random bits, hex
  std::string name;
  std::string identity;
  std::string device;
  std::vector<int64_t> clients;             // ascending
  bool Hosts(int64_t client) const;
  FeedQueue feed;
  bool feed_open = false;  // guarded by the registry's mutex
  // Its feed opened once (so a closed one now means the daemon is gone,
  // not that it has yet to open it); guarded by the registry's mutex.
  bool feed_was_open = false;
  // When its feed last opened or closed (at registration: when it
  // registered); guarded by the registry's mutex.
  std::chrono::steady_clock::time_point feed_changed =
      std::chrono::steady_clock::now();
  std::atomic<int> open_feeds{0};  // TaskFeed handlers running (the service's cap)
};

class ClientRegistry {
 public:
  explicit ClientRegistry(int64_t num_clients);

  // Validates ids (in [0, N), no duplicates, not held by another daemon)
  // and the rules above. PERMISSION_DENIED for a name or client of another
  // identity, ALREADY_EXISTS for a client a live daemon hosts.
  absl::StatusOr<std::shared_ptr<DaemonSession>> Register(
      const v1::RegisterRequest& req, const std::string& identity);

  // Which identity owns which client ids and daemon names. Saved with each
  // checkpoint and restored on --resume (server/run/ownership_file.h), so
  // after a restart the first identity to register cannot take another's.
  // Compact (4 bytes a client): a run of 100,000 clients saves it with
  // every checkpoint.
  struct Ownership {
    std::vector<std::string> identities;  // each once
    std::vector<int32_t> client_owner;    // by client id: an index, -1 none
    std::map<std::string, std::string> names;
  };
  Ownership GetOwnership() const;
  // Before any registration (a resumed run).
  void RestoreOwnership(Ownership o);

  std::shared_ptr<DaemonSession> BySession(const std::string& id) const;
  // The live session hosting `client`, or nullptr.
  std::shared_ptr<DaemonSession> OwnerOf(int64_t client) const;

  void SetFeedOpen(const std::shared_ptr<DaemonSession>& s, bool open);
  // Logical clients whose daemon holds its feed open.
  int64_t ConnectedClients() const;
  // Every client id in [0, N) is hosted by a daemon with an open feed.
  bool AllConnected() const;
  // `client`'s daemon holds its feed open.
  bool IsConnected(int64_t client) const;
  std::vector<std::shared_ptr<DaemonSession>> Sessions() const;

  // Who is missing now (server/state/lost_daemons.h decides what that
  // costs): each daemon without an open feed, with its clients and the
  // seconds since its feed closed (or since it registered, when it has not
  // opened one), and the client ids no daemon hosts, silent since the
  // registry was made.
  struct MissingDaemon {
    std::string name;
    std::vector<int64_t> clients;
    double silent_s = 0;
    // Its feed was open once: it left. Otherwise it is still joining
    // (registered, loading its data).
    bool joined = true;
  };
  struct Missing {
    std::vector<MissingDaemon> daemons;
    int64_t unhosted = 0;
    double unhosted_silent_s = 0;
    int64_t clients() const;
    // The shortest silence among them (the latest to go); 0 when none.
    double shortest_silence_s() const;
  };
  // `with_clients` false leaves each daemon's client list empty: a poll
  // that needs the silences only (the wait before a round, every 50 ms)
  // copies no list.
  Missing MissingNow(bool with_clients = true) const;
  // Seconds `client`'s daemon has been gone as MissingNow counts them; -1
  // while its feed is open.
  double SilentSeconds(int64_t client) const;

 private:
  const int64_t num_clients_;
  const std::chrono::steady_clock::time_point created_ =
      std::chrono::steady_clock::now();
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<DaemonSession>> by_name_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<DaemonSession>> by_session_ ABSL_GUARDED_BY(mu_);
  // By client id, [0, N): dense, so 100,000 clients cost 16 + 4 bytes
  // each here rather than a map node and a string.
  std::vector<std::shared_ptr<DaemonSession>> by_client_ ABSL_GUARDED_BY(mu_);
  // The first registrant of each client (an index into identities_, -1:
  // none yet), and of each daemon name.
  std::vector<int32_t> client_owner_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> identities_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int32_t> identity_index_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> name_identity_ ABSL_GUARDED_BY(mu_);

  // `n` clients for an auto registration (mu_ held): the name's clients
  // again for the same identity, else the lowest ids no session holds and
  // no other identity owns, then (when too few) ids of this identity whose
  // session is gone (its feed opened and closed since: a container
  // restarted under a new name). RESOURCE_EXHAUSTED when too few are free.
  absl::StatusOr<std::vector<int64_t>> PickLocked(const std::string& name,
                                                  const std::string& identity,
                                                  uint32_t n) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckClaims(const DaemonSession& s) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int32_t InternLocked(const std::string& identity) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether no identity, or `identity`, owns client `id`.
  bool OwnedByOrFreeLocked(int64_t id, const std::string& identity) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<DaemonSession> HostLocked(int64_t id) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // By value: callers pass a map's own entry, which Drop erases.
  void Drop(std::shared_ptr<DaemonSession> old) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_CLIENT_REGISTRY_H_
