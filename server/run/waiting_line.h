// The line the coordinator logs while it waits for clients before a
// round: how many are connected, how many are missing, and, when every
// connected daemon hosts the same number of clients (compose's scaled
// `auto:10` daemons), how many more such daemons that means, in compose's
// terms too. Pure function; thread-compatible.
#ifndef SHEFL_SERVER_RUN_WAITING_LINE_H_
#define SHEFL_SERVER_RUN_WAITING_LINE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace shefl {

// `hosted`: the clients each connected daemon hosts. `need`: what the
// round waits for ("need 20", "need all, or 15 after 60 s").
std::string WaitingLine(int64_t connected, int64_t total,
                        const std::string& need,
                        const std::vector<int64_t>& hosted);

// Client ids for a log line. A cohort of thousands would make a line of
// kilobytes a round: its first 32 ids and the count (rounds.jsonl has
// them all).
std::string ClientList(const std::vector<int64_t>& clients);

}  // namespace shefl

#endif  // SHEFL_SERVER_RUN_WAITING_LINE_H_
