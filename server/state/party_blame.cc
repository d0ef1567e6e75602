#include "server/state/party_blame.h"

#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace shefl {

void PartyBlame::Record(int64_t round, std::vector<std::string> parties,
                        bool corrupt) {
  if (corrupt)
    for (const std::string& p : parties) ++corrupt_seen_[p];
  sessions_.push_back({round, std::move(parties), corrupt});
}

std::string PartyBlame::SingledOut(const Session& s,
                                   const std::map<std::string, bool>& cleared,
                                   int64_t round) const {
  std::string suspect;
  for (const std::string& p : s.parties) {
    if (Benched(p, round)) return "";  // the session is explained
    if (cleared.count(p)) continue;
    if (!suspect.empty()) return "";  // two suspects: no one singled out
    suspect = p;
  }
  return suspect;
}

std::vector<std::string> PartyBlame::Decide(int64_t round) {
  while (!sessions_.empty() && sessions_.front().round <= round - window_)
    sessions_.pop_front();
  std::map<std::string, bool> cleared;
  for (const Session& s : sessions_)
    if (!s.corrupt)
      for (const std::string& p : s.parties) cleared[p] = true;
  // The next round is the first a new bench keeps the daemon out of.
  const int64_t next = round + 1;
  const int64_t through = bench_rounds_ > 0
                              ? round + bench_rounds_
                              : std::numeric_limits<int64_t>::max();
  std::vector<std::string> out;
  for (const Session& s : sessions_) {
    if (!s.corrupt) continue;
    const std::string p = SingledOut(s, cleared, next);
    if (p.empty()) continue;
    // Evidence already used for a bench that has run out is not used
    // again.
    if (auto b = benched_.find(p); b != benched_.end() && s.round <= b->second.round)
      continue;
    benched_[p] = {round, through, corrupt_seen_[p]};
    out.push_back(p);
  }
  return out;
}

bool PartyBlame::Benched(const std::string& daemon, int64_t round) const {
  auto it = benched_.find(daemon);
  return it != benched_.end() && round > it->second.round &&
         round <= it->second.through;
}

nlohmann::json PartyBlame::ToJson() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [daemon, b] : benched_) {
    nlohmann::json e = {{"daemon", daemon},
                        {"round", b.round},
                        {"corrupt_sessions", b.corrupt_sessions}};
    e["through"] = b.through == std::numeric_limits<int64_t>::max()
                       ? nlohmann::json(nullptr)
                       : nlohmann::json(b.through);
    out.push_back(e);
  }
  return out;
}

nlohmann::json PartyBlame::State() const {
  nlohmann::json sessions = nlohmann::json::array();
  for (const Session& s : sessions_)
    sessions.push_back({{"round", s.round}, {"parties", s.parties},
                        {"corrupt", s.corrupt}});
  nlohmann::json benched = nlohmann::json::object();
  for (const auto& [daemon, b] : benched_)
    benched[daemon] = {b.round, b.through, b.corrupt_sessions};
  return {{"sessions", sessions}, {"benched", benched},
          {"corrupt_seen", corrupt_seen_}};
}

absl::Status PartyBlame::Restore(const nlohmann::json& state) {
  try {
    sessions_.clear();
    for (const auto& s : state.at("sessions"))
      sessions_.push_back({s.at("round").get<int64_t>(),
                           s.at("parties").get<std::vector<std::string>>(),
                           s.at("corrupt").get<bool>()});
    benched_.clear();
    for (const auto& [daemon, b] : state.at("benched").items())
      benched_[daemon] = {b.at(0).get<int64_t>(), b.at(1).get<int64_t>(),
                          b.at(2).get<int64_t>()};
    corrupt_seen_ = state.at("corrupt_seen").get<std::map<std::string, int64_t>>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("the blame book's saved state: ", e.what()));
  }
  return absl::OkStatus();
}

}  // namespace shefl
