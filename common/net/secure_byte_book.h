// Secure aggregation's bytes by round, stage (common/net/wire.h's
// SecureStage) and direction: rounds.jsonl's `secure_bytes`, which splits
// what the ledger books as control and payload into setup, masked input
// and unmasking. Booked at the same messages and sizes as the ledger.
// Thread-safe: one mutex.
#ifndef SHEFL_COMMON_NET_SECURE_BYTE_BOOK_H_
#define SHEFL_COMMON_NET_SECURE_BYTE_BOOK_H_

#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "common/core/mutex.h"
#include "common/net/accounting.h"

namespace shefl {

class SecureByteBook {
 public:
  void Add(int64_t round, const std::string& stage, Direction dir,
           uint64_t bytes);
  // {"setup": {"up": B, "down": B}, "masked_input": ..., "unmask": ...}
  // for the stages the round had; null when it had none.
  nlohmann::json Round(int64_t round) const;

 private:
  struct UpDown {
    uint64_t up = 0, down = 0;
  };
  mutable Mutex mu_;
  std::map<int64_t, std::map<std::string, UpDown>> rounds_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_SECURE_BYTE_BOOK_H_
