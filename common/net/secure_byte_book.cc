#include "common/net/secure_byte_book.h"

namespace shefl {

void SecureByteBook::Add(int64_t round, const std::string& stage,
                         Direction dir, uint64_t bytes) {
  if (stage.empty()) return;
  MutexLock lock(mu_);
  UpDown& b = rounds_[round][stage];
  (dir == Direction::kUp ? b.up : b.down) += bytes;
}

nlohmann::json SecureByteBook::Round(int64_t round) const {
  MutexLock lock(mu_);
  auto it = rounds_.find(round);
  if (it == rounds_.end()) return nullptr;
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [stage, b] : it->second)
    out[stage] = {{"up", b.up}, {"down", b.down}};
  return out;
}

}  // namespace shefl
