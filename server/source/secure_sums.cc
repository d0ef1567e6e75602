#include "server/source/secure_sums.h"

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/core/log.h"

namespace shefl {

AggregationConfig SecureSums::Aggregation(
    const AggregationConfig& configured) const {
  AggregationConfig agg = configured;
  agg.rule = "uniform";
  agg.weight_by_samples = false;
  return agg;
}

void SecureSums::Open(const RoundPlan& plan, int64_t round,
                      Clock::time_point deadline) {
  CoordinatorState* s = state_;
  const SecureSession::Send send = [s](uint32_t party,
                                       const v1::FeedMessage& m) {
    if (auto owner = s->registry.OwnerOf(party)) owner->feed.Push(m);
  };
  CoordinatorState::SecureSessions sessions =
      planner_->Plan(plan, round, *state_, deadline, send);
  state_->OpenSecure(sessions);
  for (auto& [model, session] : sessions) session->Start();
}

bool SecureSums::WaitForSessions() {
  const auto gone = [this](uint32_t party) {
    return lost_->Lost(state_->registry.SilentSeconds(party));
  };
  while (!state_->stop) {
    bool all_done = true;
    const auto now = Clock::now();
    for (int64_t m = 0; m < state_->config.model.num_models; ++m) {
      auto session = state_->secure_session(m);
      if (!session) continue;
      session->Tick(now, gone);
      all_done = all_done && session->done();
    }
    if (all_done) return true;
    // A stage closes in the handler of its last message; this loop only
    // closes stages at their deadlines and notices the end.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

bool SecureSums::Gather(RoundState& rs) {
  const bool done = WaitForSessions();
  line_ = HandIn(rs);
  return done && rs.Complete();
}

// No single input is seen before a sum is unmasked: its clients count in
// shefl_updates_total and, when accepted, shefl_round_uploads_received
// then.
void SecureSums::CountUpdates(size_t clients, const std::string& result) {
  const double n = static_cast<double>(clients);
  state_->metrics.CountUpdate(result, n);
  if (result == "accepted") state_->metrics.CountRoundUpload(n);
}

nlohmann::json SecureSums::HandIn(RoundState& rs) {
  nlohmann::json line = nlohmann::json::object();
  for (int64_t m = 0; m < state_->config.model.num_models; ++m)
    line[std::to_string(m)] = HandInModel(rs, m);
  benched_line_ = Blame(rs.round());
  return line;
}

void SecureSums::RecordParties(int64_t round, const SecureSession::Outcome& o) {
  std::vector<std::string> names;
  for (uint32_t party : o.parties) {
    auto owner = state_->registry.OwnerOf(party);
    names.push_back(owner ? owner->name : absl::StrCat("party ", party));
  }
  blame_.Record(round, std::move(names), o.corrupt);
}

// A benched daemon's clients are those it hosts now; a daemon registering
// again under another name keeps none of them (ownership is by identity).
nlohmann::json SecureSums::Blame(int64_t round) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& daemon : blame_.Decide(round)) {
    std::vector<int64_t> clients;
    for (const auto& session : state_->registry.Sessions())
      if (session->name == daemon) clients = session->clients;
    for (int64_t c : clients) benched_clients_[c] = daemon;
    LogLine("coordinator",
            absl::StrCat("round ", round, ": daemon ", daemon,
                         " benched: its sessions' sums were corrupt and no "
                         "other party explains them (",
                         clients.size(), " clients sit out)"));
    out.push_back(daemon);
  }
  state_->metrics.SetSecureBenched(
      static_cast<double>(ExcludedCount(round + 1)));
  return out;
}

bool SecureSums::Excludes(int64_t client, int64_t round) const {
  auto it = benched_clients_.find(client);
  return it != benched_clients_.end() && blame_.Benched(it->second, round);
}

int64_t SecureSums::ExcludedCount(int64_t round) const {
  int64_t n = 0;
  for (const auto& [client, daemon] : benched_clients_)
    n += blame_.Benched(daemon, round) ? 1 : 0;
  return n;
}

nlohmann::json SecureSums::HandInModel(RoundState& rs, int64_t m) {
  auto session = state_->secure_session(m);
  nlohmann::json entry;
  const auto outcome = [&](const char* name) {
    entry["outcome"] = name;
    state_->metrics.CountSecureSession(name);
  };
  if (!session) {
    outcome("not_run");
    return entry;
  }
  if (!session->done()) {
    outcome("stopped");
    return entry;
  }
  SecureSession::Outcome o = session->outcome();
  entry["words"] = session->words();
  // The session's shape, once its roster was out: t, and SecAgg+'s degree
  // (0: all pairs).
  if (o.threshold > 0) {
    entry["threshold"] = o.threshold;
    entry["degree"] = o.degree;
  }
  if (o.corrupt) {
    outcome("corrupt");
    entry["why"] = o.why;
    entry["survivors"] = o.survivors;
    RecordParties(rs.round(), o);
  } else if (!o.update) {
    outcome("abandoned");
    entry["why"] = o.why;
  } else if (session->select_k() > 0 &&
             !SelectOracle(m, session->select_k(), &*o.update, &entry)) {
    outcome("refused");
  } else if (auto st = rs.AcceptSecure(m, *std::move(o.update), o.clients);
             !st.ok()) {
    outcome("refused");
    entry["why"] = std::string(st.message());
    RecordParties(rs.round(), o);  // within the range: clean for blame
    CountUpdates(o.clients.size(), "rejected");
    LogLine("coordinator", absl::StrCat("round ", rs.round(), " model ", m,
                                        ": secure sum refused: ",
                                        st.message()));
  } else {
    outcome("finished");
    RecordParties(rs.round(), o);
    planner_->Voted(m, std::move(o.votes));
    entry["survivors"] = o.survivors;
    entry["dropped"] = o.dropped;
    if (o.fit) {
      entry["energy"] = o.fit->energy;
      entry["overlap"] = o.fit->overlap;
    }
    entry["clients"] = o.clients.size();
    CountUpdates(o.clients.size(), "accepted");
  }
  return entry;
}

void SecureSums::BeforePublish(std::vector<ModelAggregator>&) {
  before_ = state_->store->Snapshot().first;
}

void SecureSums::Published() {
  for (size_t m = 0; m < before_.size(); ++m)
    planner_->Published(static_cast<int64_t>(m), *before_[m],
                        *state_->store->Get(static_cast<int64_t>(m)));
  before_.clear();
}

void SecureSums::AddFields(int64_t round, nlohmann::json* line) const {
  (*line)["secure"] = line_;
  (*line)["secure_bytes"] = state_->secure_bytes.Round(round);
  if (!benched_line_.empty()) (*line)["secure_benched"] = benched_line_;
}

void SecureSums::AddSummary(nlohmann::json* summary) const {
  (*summary)["secure_benched"] = blame_.ToJson();
}

}  // namespace shefl
