#include "server/run/waiting_line.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace shefl {

std::string WaitingLine(int64_t connected, int64_t total,
                        const std::string& need,
                        const std::vector<int64_t>& hosted) {
  const int64_t missing = std::max<int64_t>(0, total - connected);
  std::string line = absl::StrCat("waiting for clients: ", connected, "/",
                                  total, " connected, ", missing,
                                  " missing (", need, ")");
  if (missing == 0 || hosted.empty()) return line;
  const int64_t each = hosted.front();
  if (each <= 0 || std::any_of(hosted.begin(), hosted.end(),
                               [each](int64_t n) { return n != each; }))
    return line;
  const int64_t more = (missing + each - 1) / each;
  const int64_t all = static_cast<int64_t>(hosted.size()) + more;
  absl::StrAppend(&line, "; the daemons connected host ", each,
                  " each: start ", more, " more like them (", all,
                  " in all; compose: --scale daemon=", all, ")");
  return line;
}

std::string ClientList(const std::vector<int64_t>& clients) {
  constexpr size_t kShown = 32;
  if (clients.size() <= kShown) return absl::StrJoin(clients, ",");
  return absl::StrCat(
      absl::StrJoin(clients.begin(), clients.begin() + kShown, ","), ",... (",
      clients.size(), " clients)");
}

}  // namespace shefl
