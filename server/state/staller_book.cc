#include "server/state/staller_book.h"

namespace shefl {

std::vector<int64_t> StallerBook::Record(int64_t round,
                                         const std::vector<int64_t>& silent,
                                         const std::vector<int64_t>& heard,
                                         bool deadline) {
  for (int64_t c : heard) strikes_in_a_row_.erase(c);
  std::vector<int64_t> benched;
  if (strikes_ <= 0 || !deadline) return benched;
  for (int64_t c : silent) {
    ++strikes_total_;
    if (++strikes_in_a_row_[c] < strikes_) continue;
    strikes_in_a_row_.erase(c);
    benched_through_[c] = round + rounds_out_;
    benched.push_back(c);
  }
  return benched;
}

bool StallerBook::Benched(int64_t client, int64_t round) const {
  auto it = benched_through_.find(client);
  return it != benched_through_.end() && round <= it->second;
}

int64_t StallerBook::BenchedCount(int64_t round) const {
  int64_t n = 0;
  for (const auto& [c, through] : benched_through_) n += round <= through;
  return n;
}

}  // namespace shefl
