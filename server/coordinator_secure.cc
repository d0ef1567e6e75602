// The coordinator's round under aggregation.secure (docs/DESIGN.md,
// "Secure aggregation"): one session per model, opened with the tasks;
// the round loop drives their stages (server/state/secure_session.h) until
// each has its sum or is abandoned, then hands the sums to the round as
// one weighted update per model. A party whose daemon is gone for good
// (clients.lost_after_s) is not waited for at any stage.
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/core/log.h"
#include "server/coordinator.h"

namespace shefl {

void Coordinator::OpenSecure(const RoundPlan& plan, int64_t round,
                             std::chrono::steady_clock::time_point deadline) {
  CoordinatorState* s = state_.get();
  const SecureSession::Send send = [s](uint32_t party,
                                       const v1::FeedMessage& m) {
    if (auto owner = s->registry.OwnerOf(party)) owner->feed.Push(m);
  };
  CoordinatorState::SecureSessions sessions =
      secure_->Plan(plan, round, *state_, deadline, send);
  state_->OpenSecure(sessions);
  for (auto& [model, session] : sessions) session->Start();
}

bool Coordinator::WaitForSecure(RoundState&) {
  const auto gone = [this](uint32_t party) {
    return lost_->Lost(state_->registry.SilentSeconds(party));
  };
  while (!state_->stop) {
    bool all_done = true;
    const auto now = std::chrono::steady_clock::now();
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

// A secure sum's clients in the series plain uploads count in, once the
// sum is unmasked (no single input is seen before): shefl_updates_total and,
// when accepted, shefl_round_uploads_received.
void Coordinator::CountSecureUpdates(size_t clients, const std::string& result) {
  const double n = static_cast<double>(clients);
  state_->metrics.CountUpdate(result, n);
  if (result == "accepted") state_->metrics.CountRoundUpload(n);
}

nlohmann::json Coordinator::CloseSecure(RoundState& rs) {
  nlohmann::json line = nlohmann::json::object();
  for (int64_t m = 0; m < state_->config.model.num_models; ++m) {
    auto session = state_->secure_session(m);
    nlohmann::json entry;
    if (!session) {
      entry["outcome"] = "not_run";
      state_->metrics.CountSecureSession("not_run");
    } else if (!session->done()) {
      entry["outcome"] = "stopped";
      state_->metrics.CountSecureSession("stopped");
    } else {
      SecureSession::Outcome o = session->outcome();
      entry["words"] = session->words();
      if (!o.update) {
        entry["outcome"] = "abandoned";
        entry["why"] = o.why;
        state_->metrics.CountSecureSession("abandoned");
      } else if (auto st = rs.AcceptSecure(m, *std::move(o.update), o.clients);
                 !st.ok()) {
        entry["outcome"] = "refused";
        entry["why"] = std::string(st.message());
        state_->metrics.CountSecureSession("refused");
        CountSecureUpdates(o.clients.size(), "rejected");
        LogLine("coordinator", absl::StrCat("round ", rs.round(), " model ", m,
                                            ": secure sum refused: ",
                                            st.message()));
      } else {
        entry["outcome"] = "finished";
        entry["survivors"] = o.survivors;
        entry["dropped"] = o.dropped;
        entry["clients"] = o.clients.size();
        state_->metrics.CountSecureSession("finished");
        CountSecureUpdates(o.clients.size(), "accepted");
      }
    }
    line[std::to_string(m)] = std::move(entry);
  }
  return line;
}

void Coordinator::AccumulateSecure(const std::vector<ModelSnapshot>& before) {
  for (size_t m = 0; m < before.size(); ++m)
    secure_->Published(static_cast<int64_t>(m), *before[m],
                       *state_->store->Get(static_cast<int64_t>(m)));
}

}  // namespace shefl
