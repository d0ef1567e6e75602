#include "server/state/lost_daemons.h"

#include <algorithm>
#include <set>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace shefl {

int64_t ClientQuorum(const ClientsConfig& cl) {
  if (cl.min_connected > 0) return std::min(cl.min_connected, cl.num_clients);
  const int64_t cohort = cl.per_round_hpc + cl.per_round_lpc;
  const int64_t half = (cl.num_clients + 1) / 2;
  return std::min(std::max(cohort, half), cl.num_clients);
}

std::vector<LostDaemons::Loss> LostDaemons::Note(
    int64_t round, const ClientRegistry::Missing& missing) {
  std::set<std::string> now;
  std::vector<Loss> fresh;
  for (const ClientRegistry::MissingDaemon& d : missing.daemons) {
    // One still joining (no feed yet) has not left: not a loss.
    if (!d.joined) continue;
    now.insert(d.name);
    if (gone_.count(d.name)) continue;
    Loss loss;
    loss.daemon = d.name;
    loss.clients = d.clients;
    loss.round = round;
    loss.silent_s = d.silent_s;
    loss.gone_at = absl::FormatTime(
        "%Y-%m-%dT%H:%M:%SZ", absl::Now() - absl::Seconds(d.silent_s),
        absl::UTCTimeZone());
    gone_[d.name] = losses_.size();
    losses_.push_back(loss);
    fresh.push_back(std::move(loss));
  }
  for (auto it = gone_.begin(); it != gone_.end();) {
    if (now.count(it->first)) {
      ++it;
      continue;
    }
    losses_[it->second].back_round = round;
    it = gone_.erase(it);
  }
  return fresh;
}

nlohmann::json LostDaemons::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const Loss& l : losses_)
    out.push_back({{"daemon", l.daemon},
                   {"clients", l.clients},
                   {"round", l.round},
                   {"gone_at", l.gone_at},
                   {"silent_seconds", l.silent_s},
                   {"back_round", l.back_round > 0
                                      ? nlohmann::json(l.back_round)
                                      : nlohmann::json(nullptr)}});
  return out;
}

}  // namespace shefl
