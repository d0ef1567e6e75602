#include "server/client_registry.h"

#include <algorithm>
#include <random>

#include "absl/strings/str_cat.h"

namespace shefl {

void FeedQueue::Push(v1::FeedMessage m) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    queue_.push_back(std::move(m));
  }
  cv_.notify_all();
}

std::optional<v1::FeedMessage> FeedQueue::Pop(std::chrono::milliseconds t) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, t, [&] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return std::nullopt;
  v1::FeedMessage m = std::move(queue_.front());
  queue_.pop_front();
  return m;
}

void FeedQueue::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

bool FeedQueue::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_;
}

absl::StatusOr<std::shared_ptr<DaemonSession>> ClientRegistry::Register(
    const v1::RegisterRequest& req) {
  if (req.daemon_name().empty())
    return absl::InvalidArgumentError("register: daemon_name is empty");
  if (req.clients().empty())
    return absl::InvalidArgumentError(
        absl::StrCat("register: daemon '", req.daemon_name(), "' hosts no clients"));
  auto s = std::make_shared<DaemonSession>();
  s->name = req.daemon_name();
  s->device = req.device();
  for (const auto& c : req.clients()) {
    const int64_t id = c.client_id();
    if (id < 0 || id >= num_clients_)
      return absl::InvalidArgumentError(absl::StrCat(
          "register: client id ", id, " is out of range [0, ", num_clients_, ")"));
    if (s->num_samples.count(id))
      return absl::InvalidArgumentError(
          absl::StrCat("register: client id ", id, " listed twice"));
    s->clients.push_back(id);
    s->num_samples[id] = c.num_samples();
  }
  std::sort(s->clients.begin(), s->clients.end());

  std::lock_guard<std::mutex> lock(mu_);
  for (int64_t id : s->clients) {
    auto it = by_client_.find(id);
    if (it != by_client_.end() && it->second->name != s->name)
      return absl::AlreadyExistsError(absl::StrCat(
          "register: client ", id, " is already hosted by daemon '",
          it->second->name, "'"));
  }
  s->session_id = absl::StrCat(s->name, "#", next_session_++, "-",
                               std::random_device{}() % 100000);
  if (auto old = by_name_.find(s->name); old != by_name_.end()) {
    old->second->feed.Close();
    for (int64_t id : old->second->clients) by_client_.erase(id);
  }
  by_name_[s->name] = s;
  for (int64_t id : s->clients) by_client_[id] = s;
  return s;
}

std::shared_ptr<DaemonSession> ClientRegistry::BySession(
    const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, s] : by_name_)
    if (s->session_id == id) return s;
  return nullptr;
}

std::shared_ptr<DaemonSession> ClientRegistry::OwnerOf(int64_t client) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_client_.find(client);
  return it == by_client_.end() ? nullptr : it->second;
}

void ClientRegistry::SetFeedOpen(const std::shared_ptr<DaemonSession>& s,
                                 bool open) {
  std::lock_guard<std::mutex> lock(mu_);
  s->feed_open = open;
}

int64_t ClientRegistry::ConnectedClients() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [id, s] : by_client_) n += s->feed_open ? 1 : 0;
  return n;
}

bool ClientRegistry::AllConnected() const {
  return ConnectedClients() == num_clients_;
}

std::vector<std::shared_ptr<DaemonSession>> ClientRegistry::Sessions() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::shared_ptr<DaemonSession>> out;
  for (const auto& [name, s] : by_name_) out.push_back(s);
  return out;
}

}  // namespace shefl
