#include "server/source/plain_uploads.h"

#include "absl/strings/str_format.h"
#include "common/core/log.h"
#include "server/run/waiting_line.h"

namespace shefl {

bool PlainUploads::Gather(RoundState& rs) {
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
