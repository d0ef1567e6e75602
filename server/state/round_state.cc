#include "server/state/round_state.h"

#include <atomic>
#include <climits>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "common/core/mutex.h"
#include "common/core/status_macros.h"

namespace shefl {

RoundState::RoundState(int64_t round, const RoundPlan& plan,
                       std::vector<uint64_t> versions, uint64_t dim,
                       const AggregationConfig& agg, int64_t num_models,
                       Clock::time_point deadline)
    : round_(round),
      versions_(std::move(versions)),
      deadline_(deadline),
      needed_(plan.needed) {
  const CohortShape shape{num_models, plan.num_hpc, plan.num_lpc,
                          plan.hpc_subsets};
  for (int64_t m = 0; m < num_models; ++m)
    aggregators_.emplace_back(agg, shape, dim);
  for (const ClientTask& t : plan.tasks)
    for (size_t i = 0; i < t.models.size(); ++i)
      pairs_[{t.client_id, t.models[i]}] = Pair{t.k[i], t.tier};
}

absl::Status RoundState::CheckAssigned(int64_t client, int64_t model,
                                       uint64_t version) const {
  MutexLock lock(mu_);
  if (!pairs_.count({client, model}))
    return absl::PermissionDeniedError(absl::StrCat(
        "client ", client, " was not assigned model ", model, " in round ",
        round_));
  if (version != versions_.at(model))
    return absl::FailedPreconditionError(absl::StrCat(
        "stale model version ", version, " for model ", model,
        " (current ", versions_.at(model), ")"));
  return absl::OkStatus();
}

absl::Status RoundState::CheckNotReceived(int64_t client, int64_t model) const {
  MutexLock lock(mu_);
  auto it = pairs_.find({client, model});
  if (it != pairs_.end() && it->second.received)
    return absl::AlreadyExistsError(absl::StrCat(
        "duplicate upload: client ", client, " already sent model ", model));
  return absl::OkStatus();
}

absl::StatusOr<int64_t> RoundState::Budget(int64_t client,
                                           int64_t model) const {
  MutexLock lock(mu_);
  auto it = pairs_.find({client, model});
  if (it == pairs_.end())
    return absl::PermissionDeniedError(absl::StrCat(
        "client ", client, " was not assigned model ", model));
  return it->second.k;
}

absl::Status RoundState::Accept(int64_t client, int64_t model,
                                double num_samples, SparseDelta delta) {
  UniqueLock lock(mu_);
  if (closed_)
    return LateError(
        absl::StrCat("round ", round_, " is closed: update arrived late"));
  auto it = pairs_.find({client, model});
  if (it == pairs_.end())
    return absl::PermissionDeniedError(absl::StrCat(
        "client ", client, " was not assigned model ", model));
  if (it->second.received)
    return absl::AlreadyExistsError(absl::StrCat(
        "duplicate upload: client ", client, " already sent model ", model));
  if (static_cast<int64_t>(delta.nnz()) > it->second.k)
    return WithReason(absl::InvalidArgumentError(absl::StrCat(
                          "k = ", delta.nnz(), " exceeds the budget ",
                          it->second.k)),
                      "over_budget");
  ReceivedUpdate u{client, it->second.tier, num_samples, std::move(delta)};
  SHEFL_RETURN_IF_ERROR(aggregators_.at(model).Add(std::move(u)));
  it->second.received = true;
  it->second.arrived_s =
      std::chrono::duration<double>(Clock::now() - opened_).count();
  ++received_;
  lock.unlock();
  cv_.notify_all();
  return absl::OkStatus();
}

absl::Status RoundState::AcceptSecure(int64_t model, SparseDelta sum,
                                      const std::vector<int64_t>& clients) {
  {
    MutexLock lock(mu_);
    if (closed_)
      return absl::FailedPreconditionError(
          absl::StrCat("round ", round_, " is closed"));
    const int64_t id = clients.empty() ? 0 : clients.front();
    SHEFL_RETURN_IF_ERROR(
        aggregators_.at(model).Add({id, Tier::kLpc, 1.0, std::move(sum)}));
    const double now =
        std::chrono::duration<double>(Clock::now() - opened_).count();
    for (int64_t client : clients) {
      auto it = pairs_.find({client, model});
      if (it == pairs_.end() || it->second.received) continue;
      it->second.received = it->second.replied = true;
      it->second.arrived_s = now;
      ++received_;
      ++replied_;
    }
  }
  cv_.notify_all();
  return absl::OkStatus();
}

bool RoundState::Complete() const {
  MutexLock lock(mu_);
  return CompleteLocked();
}

void RoundState::Replied(int64_t client, int64_t model) {
  {
    MutexLock lock(mu_);
    auto it = pairs_.find({client, model});
    if (it == pairs_.end() || it->second.replied) return;
    it->second.replied = true;
    ++replied_;
  }
  cv_.notify_all();
}

// Complete: every pair replied to or given up, or (over-selection) the
// first `needed_` clients have every pair replied to.
bool RoundState::CompleteLocked() const {
  if (replied_ == static_cast<int64_t>(pairs_.size())) return true;
  int64_t done = 0;
  bool settled = true;  // every pair replied to or given up
  for (auto it = pairs_.begin(); it != pairs_.end();) {
    const int64_t client = it->first.first;
    bool all = true;
    for (; it != pairs_.end() && it->first.first == client; ++it) {
      all = all && it->second.replied;
      settled = settled && (it->second.replied || it->second.abandoned);
    }
    done += all;
  }
  return settled || (needed_ > 0 && done >= needed_);
}

bool RoundState::WaitComplete(const std::atomic<bool>& stop) {
  return WaitComplete(stop, deadline_);
}

bool RoundState::WaitComplete(const std::atomic<bool>& stop,
                              Clock::time_point until) {
  UniqueLock lock(mu_);
  while (!CompleteLocked()) {
    const auto now = Clock::now();
    if (stop.load() || now >= deadline_ || now >= until) return false;
    cv_.wait_for(lock, std::chrono::milliseconds(100));
  }
  return true;
}

int64_t RoundState::Abandon(int64_t client) {
  int64_t n = 0;
  {
    MutexLock lock(mu_);
    for (auto it = pairs_.lower_bound({client, INT64_MIN});
         it != pairs_.end() && it->first.first == client; ++it)
      if (!it->second.received && !it->second.abandoned) {
        it->second.abandoned = true;
        ++n;
      }
  }
  cv_.notify_all();
  return n;
}

std::vector<int64_t> RoundState::waiting_clients() const {
  MutexLock lock(mu_);
  std::vector<int64_t> out;
  for (const auto& [key, p] : pairs_)
    if (!p.replied && !p.abandoned &&
        (out.empty() || out.back() != key.first))
      out.push_back(key.first);
  return out;
}

std::vector<int64_t> RoundState::abandoned_clients() const {
  MutexLock lock(mu_);
  std::vector<int64_t> out;
  for (const auto& [key, p] : pairs_)
    if (p.abandoned && (out.empty() || out.back() != key.first))
      out.push_back(key.first);
  return out;
}

std::vector<ModelAggregator>& RoundState::Close() {
  UniqueLock lock(mu_);
  closed_ = true;
  // Booking a reply takes microseconds; the bound only guards a handler
  // that never gets there.
  cv_.wait_for(lock, std::chrono::seconds(2),
               [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
                 return replied_ >= received_;
               });
  return aggregators_;
}

bool RoundState::closed() const {
  MutexLock lock(mu_);
  return closed_;
}

void RoundState::CountRefusal(const std::string& reason, uint64_t bytes,
                              bool update) {
  MutexLock lock(mu_);
  if (update) ++(reason == "late" ? late_ : rejected_);
  ++refusals_[reason];
  refused_bytes_ += bytes;
}

std::map<std::string, int64_t> RoundState::refusals() const {
  MutexLock lock(mu_);
  return refusals_;
}

uint64_t RoundState::refused_bytes() const {
  MutexLock lock(mu_);
  return refused_bytes_;
}

int64_t RoundState::accepted() const {
  MutexLock lock(mu_);
  return received_;
}
int64_t RoundState::rejected() const {
  MutexLock lock(mu_);
  return rejected_;
}
int64_t RoundState::late() const {
  MutexLock lock(mu_);
  return late_;
}
int64_t RoundState::expected() const {
  MutexLock lock(mu_);
  return static_cast<int64_t>(pairs_.size());
}

std::vector<int64_t> RoundState::participants() const {
  MutexLock lock(mu_);
  std::set<int64_t> ids;
  for (const auto& [key, p] : pairs_) ids.insert(key.first);
  return {ids.begin(), ids.end()};
}

std::set<int64_t> RoundState::pending_models(int64_t client) const {
  MutexLock lock(mu_);
  std::set<int64_t> out;
  for (auto it = pairs_.lower_bound({client, INT64_MIN});
       it != pairs_.end() && it->first.first == client; ++it)
    if (!it->second.received) out.insert(it->first.second);
  return out;
}

std::vector<int64_t> RoundState::completed_clients() const {
  MutexLock lock(mu_);
  std::map<int64_t, bool> done;
  for (const auto& [key, p] : pairs_) {
    auto [it, fresh] = done.emplace(key.first, p.received);
    if (!fresh) it->second = it->second && p.received;
  }
  std::vector<int64_t> out;
  for (const auto& [id, ok] : done)
    if (ok) out.push_back(id);
  return out;
}

}  // namespace shefl

namespace shefl {

std::map<int64_t, bool> RoundState::HeardByClient() const {
  MutexLock lock(mu_);
  std::map<int64_t, bool> any;
  for (const auto& [key, p] : pairs_) any[key.first] = any[key.first] || p.received;
  return any;
}

std::vector<int64_t> RoundState::silent_clients() const {
  std::vector<int64_t> out;
  for (const auto& [id, any] : HeardByClient())
    if (!any) out.push_back(id);
  return out;
}

std::vector<int64_t> RoundState::heard_clients() const {
  std::vector<int64_t> out;
  for (const auto& [id, any] : HeardByClient())
    if (any) out.push_back(id);
  return out;
}

std::map<int64_t, double> RoundState::arrival_seconds() const {
  MutexLock lock(mu_);
  std::map<int64_t, double> out;
  for (const auto& [key, p] : pairs_)
    if (p.received) {
      double& t = out[key.first];
      t = std::max(t, p.arrived_s);
    }
  return out;
}

}  // namespace shefl
