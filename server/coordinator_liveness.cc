// The coordinator's liveness between and within rounds (docs/DESIGN.md,
// "Liveness"): waiting for daemons before a round (all of them, or the
// quorum once the missing ones are lost), booking the lost, giving up
// below the quorum, and waiting for a round's uploads without waiting for
// a daemon that is gone.
#include <chrono>
#include <thread>

#include "absl/strings/str_format.h"
#include "common/core/log.h"
#include "server/coordinator.h"
#include "server/state/lost_daemons.h"
#include "server/waiting_line.h"

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
  if (absl::Status st = WaitForRecord(); !st.ok()) return st;
  LogLine("coordinator", std::string(why.message()));
  return why;
}

// Waits for the round's uploads, and stops waiting for a client whose
// daemon has been gone clients.lost_after_s: a daemon that left for good
// costs the round its updates, not the rest of the deadline.
bool Coordinator::WaitForUploads(RoundState& rs) {
  while (true) {
    if (rs.WaitComplete(state_->stop, Clock::now() + std::chrono::seconds(1)))
      return true;
    if (state_->stop || Clock::now() >= rs.deadline()) return false;
    std::vector<int64_t> given_up;
    for (int64_t client : rs.waiting_clients())
      if (lost_->Lost(state_->registry.SilentSeconds(client)) &&
          rs.Abandon(client) > 0)
        given_up.push_back(client);
    if (!given_up.empty())
      LogLine("coordinator",
              absl::StrFormat("round %d stops waiting for clients %s: their "
                              "daemon is gone (clients.lost_after_s %.0f)",
                              rs.round(), ClientList(given_up),
                              state_->config.clients.lost_after_s));
  }
}

}  // namespace shefl
