// The daemons that registered and the logical clients each one hosts.
// A daemon that re-registers under the same name (after a reconnect)
// replaces its old session; its old feed is closed.
#ifndef SHEFL_SERVER_CLIENT_REGISTRY_H_
#define SHEFL_SERVER_CLIENT_REGISTRY_H_

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
#include "shefl.pb.h"

namespace shefl {

// Messages waiting to be written on one daemon's TaskFeed stream.
class FeedQueue {
 public:
  void Push(v1::FeedMessage m);
  // Waits up to `timeout` for a message; nullopt on timeout or when closed
  // and drained.
  std::optional<v1::FeedMessage> Pop(std::chrono::milliseconds timeout);
  void Close();
  bool closed() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<v1::FeedMessage> queue_;
  bool closed_ = false;
};

struct DaemonSession {
  std::string session_id;
  std::string name;
  std::string device;
  std::vector<int64_t> clients;             // ascending
  std::map<int64_t, uint64_t> num_samples;  // per client, as reported
  FeedQueue feed;
  bool feed_open = false;  // guarded by the registry's mutex
};

class ClientRegistry {
 public:
  explicit ClientRegistry(int64_t num_clients) : num_clients_(num_clients) {}

  // Validates ids (in [0, N), no duplicates, not held by another daemon).
  absl::StatusOr<std::shared_ptr<DaemonSession>> Register(
      const v1::RegisterRequest& req);

  std::shared_ptr<DaemonSession> BySession(const std::string& id) const;
  // The live session hosting `client`, or nullptr.
  std::shared_ptr<DaemonSession> OwnerOf(int64_t client) const;

  void SetFeedOpen(const std::shared_ptr<DaemonSession>& s, bool open);
  // Logical clients whose daemon holds its feed open.
  int64_t ConnectedClients() const;
  // Every client id in [0, N) is hosted by a daemon with an open feed.
  bool AllConnected() const;
  std::vector<std::shared_ptr<DaemonSession>> Sessions() const;

 private:
  const int64_t num_clients_;
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<DaemonSession>> by_name_;
  std::map<int64_t, std::shared_ptr<DaemonSession>> by_client_;
  uint64_t next_session_ = 1;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_CLIENT_REGISTRY_H_
