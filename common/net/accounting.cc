#include "common/net/accounting.h"

#include <google/protobuf/message_lite.h>

#include <nlohmann/json.hpp>

#include "common/core/mutex.h"

namespace shefl {

uint64_t WireSize(const google::protobuf::MessageLite& message) {
  return message.ByteSizeLong() + kGrpcMessageHeader;
}

void ByteCounts::Add(Direction dir, Traffic kind, uint64_t bytes) {
  const bool up = dir == Direction::kUp;
  if (kind == Traffic::kPayload)
    (up ? payload_up : payload_down) += bytes;
  else
    (up ? control_up : control_down) += bytes;
}

ByteCounts& ByteCounts::operator+=(const ByteCounts& o) {
  payload_up += o.payload_up;
  payload_down += o.payload_down;
  control_up += o.control_up;
  control_down += o.control_down;
  return *this;
}

bool ByteCounts::operator==(const ByteCounts& o) const {
  return payload_up == o.payload_up && payload_down == o.payload_down &&
         control_up == o.control_up && control_down == o.control_down;
}

nlohmann::json ToJson(const ByteCounts& c) {
  return {{"payload_up", c.payload_up},
          {"payload_down", c.payload_down},
          {"control_up", c.control_up},
          {"control_down", c.control_down}};
}

void ByteLedger::Add(int64_t round, int64_t client, int64_t model,
                     Direction dir, Traffic kind, uint64_t bytes) {
  MutexLock lock(mu_);
  Round& r = rounds_[round];
  r.by_client[client].Add(dir, kind, bytes);
  r.by_model[model].Add(dir, kind, bytes);
  total_.Add(dir, kind, bytes);
}

std::map<int64_t, ByteCounts> ByteLedger::ByClient(int64_t round) const {
  MutexLock lock(mu_);
  auto it = rounds_.find(round);
  return it == rounds_.end() ? std::map<int64_t, ByteCounts>{}
                             : it->second.by_client;
}

std::map<int64_t, ByteCounts> ByteLedger::ByModel(int64_t round) const {
  MutexLock lock(mu_);
  auto it = rounds_.find(round);
  return it == rounds_.end() ? std::map<int64_t, ByteCounts>{}
                             : it->second.by_model;
}

ByteCounts ByteLedger::RoundTotal(int64_t round) const {
  ByteCounts sum;
  for (const auto& [client, c] : ByClient(round)) sum += c;
  return sum;
}

ByteCounts ByteLedger::Total() const {
  MutexLock lock(mu_);
  return total_;
}

}  // namespace shefl
