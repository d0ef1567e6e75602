// Strikes against stallers: clients that were sampled, took their task,
// and sent no update before the round's deadline. A daemon doing that
// holds every round it is in until the deadline; after
// clients.staller_strikes such rounds in a row, a client sits out the next
// clients.staller_rounds_out rounds (not sampled), then starts again with
// no strikes. A round that completed (every pair, or the over-selection's
// first C) strikes nobody: the clients it did not wait for were not in
// its way. Any update sent clears a client's strikes.
// Thread-compatible: the round loop alone calls it.
#ifndef SHEFL_SERVER_STATE_STALLER_BOOK_H_
#define SHEFL_SERVER_STATE_STALLER_BOOK_H_

#include <cstdint>
#include <map>
#include <vector>

namespace shefl {

class StallerBook {
 public:
  // strikes 0: never benches anyone.
  StallerBook(int64_t strikes, int64_t rounds_out)
      : strikes_(strikes), rounds_out_(rounds_out) {}

  // After round `round` closed: `silent` sent nothing, `heard` sent at
  // least one update. Strikes count only when the round ran to its
  // deadline (`deadline`). Returns the clients benched by this round.
  std::vector<int64_t> Record(int64_t round, const std::vector<int64_t>& silent,
                              const std::vector<int64_t>& heard, bool deadline);
  // Whether `client` sits out round `round`.
  bool Benched(int64_t client, int64_t round) const;
  // Clients sitting out `round`.
  int64_t BenchedCount(int64_t round) const;
  int64_t strikes_total() const { return strikes_total_; }

 private:
  const int64_t strikes_, rounds_out_;
  std::map<int64_t, int64_t> strikes_in_a_row_;
  std::map<int64_t, int64_t> benched_through_;  // last round sat out
  int64_t strikes_total_ = 0;
};

}  // namespace shefl

#endif  // SHEFL_SERVER_STATE_STALLER_BOOK_H_
