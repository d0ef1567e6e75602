// Blame for corrupt secure sums, by group testing (docs/DESIGN.md,
// "Secure aggregation: honest sums"). A corrupt session says only that one
// of its parties lied; a clean one, that none of its parties did. Over
// the last `window` rounds (every model's sessions), a party in a clean
// session is cleared; a party in corrupt sessions and in no clean one is
// a suspect. A suspect is benched when the evidence singles it out: a
// corrupt session in the window whose other parties are all cleared or
// benched (definite defectives). So an honest party that only ever sat
// beside the liar is not benched on suspicion; once the cohort draws them
// apart, the liar is. A benched daemon's clients sit out
// `bench_rounds` rounds (0: the rest of the run).
// What it cannot do: a party that lies only sometimes is cleared by its
// honest sessions, and a session it corrupts beside cleared parties
// singles out nobody; the honest range still keeps every corrupt sum off
// the models, so the cost is the model-rounds it spoils, never a model.
// Thread-compatible: the round loop alone calls it.
#ifndef SHEFL_SERVER_STATE_PARTY_BLAME_H_
#define SHEFL_SERVER_STATE_PARTY_BLAME_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"

namespace shefl {

class PartyBlame {
 public:
  PartyBlame(int64_t window, int64_t bench_rounds)
      : window_(window), bench_rounds_(bench_rounds) {}

  // A finished session of round `round`: the daemons whose inputs its
  // sum holds, and whether the sum left the honest range.
  void Record(int64_t round, std::vector<std::string> parties, bool corrupt);
  // After round `round`'s sessions are recorded: the daemons it benches
  // (each once, by name).
  std::vector<std::string> Decide(int64_t round);
  // Whether `daemon` sits out round `round`.
  bool Benched(const std::string& daemon, int64_t round) const;
  // summary.json's `secure_benched`: each benched daemon, the round that
  // benched it, the corrupt sessions it sat in, the last round it sits out
  // (null: the rest of the run).
  nlohmann::json ToJson() const;
  // Everything it holds, for the checkpoint; Restore refuses what State
  // did not write (InvalidArgument, naming the field).
  nlohmann::json State() const;
  absl::Status Restore(const nlohmann::json& state);

 private:
  struct Session {
    int64_t round = 0;
    std::vector<std::string> parties;
    bool corrupt = false;
  };
  // The one party of `s` neither cleared nor benched at `round`, or "".
  std::string SingledOut(const Session& s, const std::map<std::string, bool>& cleared,
                         int64_t round) const;

  const int64_t window_, bench_rounds_;
  std::deque<Session> sessions_;  // the window's, oldest first
  struct Bench {
    int64_t round = 0, through = 0, corrupt_sessions = 0;
  };
  std::map<std::string, Bench> benched_;
  std::map<std::string, int64_t> corrupt_seen_;  // over the whole run
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_PARTY_BLAME_H_
