// The coordinator's liveness between and within rounds (docs/DESIGN.md,
// "Liveness"): waiting for daemons before a round (all of them, or the
// quorum once the missing ones are lost), booking the lost, and giving up
// below the quorum. Within a round, not waiting for a daemon that is gone
// is the update source's (server/source/).
#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/core/log.h"
#include "common/core/status_macros.h"
#include "server/coordinator.h"
#include "server/run/waiting_line.h"
#include "server/state/lost_daemons.h"

namespace shefl {

using Clock = std::chrono::steady_clock;

// Before the first round: every client, or after start_timeout_s the
// quorum. Before a later round: every client, or the quorum once each
// missing daemon has been gone lost_after_s (it may be restarting). Below
// the quorum it waits, and after give_up_after_s stops the run.
absl::Status Coordinator::WaitForDaemons(int64_t round) {
  const ClientsConfig& cl = state_->config.clients;
  const bool first = round == first_round_ + 1;
  const int64_t quorum = ClientQuorum(cl);
  const auto start = Clock::now();
  auto ready = [&] {
    const int64_t n = state_->registry.ConnectedClients();
    if (n == cl.num_clients) return true;
    if (n < quorum) return false;
    if (first) return Since(start) >= cl.start_timeout_s;
    return lost_->MayGoOn(state_->registry.MissingNow(/*with_clients=*/false));
  };
  auto last_log = Clock::now() - std::chrono::seconds(10);
  while (!state_->stop && !ready()) {
    const int64_t n = state_->registry.ConnectedClients();
    state_->metrics.SetClientsConnected(n);
    if (n < quorum && cl.give_up_after_s > 0 &&
        Since(start) >= cl.give_up_after_s)
      return absl::UnavailableError(absl::StrFormat(
          "clients.give_up_after_s: waited %.0f s before round %d with %d/%d "
          "clients connected, below the quorum of %d "
          "(clients.min_connected); the run stops here and resumes with "
          "--resume %s once daemons are back",
          Since(start), round, n, cl.num_clients, quorum, results_->dir()));
    if (Since(last_log) >= 10) {
      LogLine("coordinator", WaitingLine(n, cl.num_clients,
                                         WaitingFor(first, n, quorum),
                                         ConnectedHosts()));
      last_log = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  NoteLost(round);
  return absl::OkStatus();
}

// What a waiting line says the round waits for.
std::string Coordinator::WaitingFor(bool first, int64_t connected,
                                    int64_t quorum) const {
  const ClientsConfig& cl = state_->config.clients;
  if (first && quorum < cl.num_clients)
    return absl::StrFormat("need all, or %d after %.0f s", quorum,
                           cl.start_timeout_s);
  if (connected < quorum)
    return absl::StrFormat("need %d, the quorum; giving up after %.0f s", quorum,
                           cl.give_up_after_s);
  return absl::StrFormat("need all, or %d once the missing are gone %.0f s",
                         quorum, cl.lost_after_s);
}

// The clients each connected daemon hosts (for the waiting line).
std::vector<int64_t> Coordinator::ConnectedHosts() const {
  std::vector<int64_t> hosted;
  for (const auto& session : state_->registry.Sessions())
    if (!session->clients.empty() &&
        state_->registry.IsConnected(session->clients.front()))
      hosted.push_back(static_cast<int64_t>(session->clients.size()));
  return hosted;
}

// Books the daemons round `round` goes on without, and says so once.
void Coordinator::NoteLost(int64_t round) {
  const ClientRegistry::Missing missing = state_->registry.MissingNow();
  state_->metrics.SetClientsConnected(state_->registry.ConnectedClients());
  for (const LostDaemons::Loss& l : lost_->Note(round, missing))
    LogLine("coordinator",
            absl::StrFormat("round %d goes on without daemon '%s' (clients "
                            "%s): gone %.0f s (clients.lost_after_s %.0f); "
                            "it rejoins with its clients if it comes back",
                            round, LogSafe(l.daemon), ClientList(l.clients),
                            l.silent_s, state_->config.clients.lost_after_s));
}

absl::Status Coordinator::GiveUp(const absl::Status& why) {
  // The last round's line and checkpoint, so --resume goes on from it.
  SHEFL_RETURN_IF_ERROR(WaitForRecord());
  LogLine("coordinator", std::string(why.message()));
  return why;
}

}  // namespace shefl
