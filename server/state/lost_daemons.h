// What a missing daemon costs between rounds (docs/DESIGN.md, "Trust and
// faults"): the quorum a round needs, when a daemon that is gone counts as
// lost (its clients are left out and the run goes on), and the book of the
// daemons a run went on without (summary.json `clients_lost`).
//
// A daemon that is gone may be restarting (shefl run, systemd and
// Kubernetes bring one back within seconds), so a round waits for it for
// clients.lost_after_s of silence; after that it is lost, and rounds go on
// with the connected clients as long as the quorum holds. A lost daemon
// that comes back rejoins with its clients (ownership is durable).
// Thread-compatible: the round loop alone calls it.
#ifndef SHEFL_SERVER_STATE_LOST_DAEMONS_H_
#define SHEFL_SERVER_STATE_LOST_DAEMONS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/core/config.h"
#include "server/state/client_registry.h"

namespace shefl {

// clients.min_connected, or (0) the larger of the cohort size C and half
// of N rounded up, at most N. C, so that a round can draw its whole
// cohort; half of N, so that a run whose federation has shrunk to a
// minority stops (resumable) rather than report results of a federation
// it no longer is.
int64_t ClientQuorum(const ClientsConfig& cl);

class LostDaemons {
 public:
  struct Loss {
    std::string daemon;
    std::vector<int64_t> clients;
    int64_t round = 0;       // the first round that went on without it
    std::string gone_at;     // UTC, RFC 3339: when its feed closed
    double silent_s = 0;     // how long it had been gone by then
    int64_t back_round = 0;  // the first round it was back for; 0: not back
  };

  explicit LostDaemons(double lost_after_s) : lost_after_s_(lost_after_s) {}

  // Whether a round may go on without the clients missing now: every
  // missing daemon (and unhosted id) has been silent lost_after_s.
  bool MayGoOn(const ClientRegistry::Missing& missing) const {
    return missing.shortest_silence_s() >= lost_after_s_;
  }
  // Whether a round may stop waiting for a client silent `silent_s`
  // (-1: connected).
  bool Lost(double silent_s) const {
    return silent_s >= 0 && silent_s >= lost_after_s_;
  }

  // Before round `round` opens with `missing` left out: books each daemon
  // newly missing as lost (one whose feed was open once: a daemon still
  // joining has not left), and each lost one that is no longer missing as
  // back. Returns the losses booked now.
  std::vector<Loss> Note(int64_t round, const ClientRegistry::Missing& missing);

  const std::vector<Loss>& losses() const { return losses_; }
  // summary.json `clients_lost`: one object per loss.
  nlohmann::json ToJson() const;

 private:
  const double lost_after_s_;
  std::vector<Loss> losses_;
  std::map<std::string, size_t> gone_;  // daemon name -> its open loss
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_LOST_DAEMONS_H_
