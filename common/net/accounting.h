// Byte accounting (docs/DESIGN.md, "Wire format and byte accounting"). Both
// ends count every gRPC message they send or receive at its exact serialized
// size plus gRPC's 5-byte message header (1 byte compressed flag, 4 bytes
// length), per round, per logical client, per model, per direction, payload
// apart from control. Because both ends apply the same rule to the same
// messages, their per-client figures agree exactly.
#ifndef SHEFL_COMMON_NET_ACCOUNTING_H_
#define SHEFL_COMMON_NET_ACCOUNTING_H_

#include <cstdint>
#include <map>
#include <mutex>

#include <nlohmann/json_fwd.hpp>

#include "common/core/mutex.h"

namespace google::protobuf {
class MessageLite;
}

namespace shefl {

constexpr uint64_t kGrpcMessageHeader = 5;

// The bytes a message occupies in a gRPC stream (uncompressed).
uint64_t WireSize(const google::protobuf::MessageLite& message);

enum class Direction { kUp, kDown };        // up: daemon -> coordinator
enum class Traffic { kPayload, kControl };  // payload: model/delta chunks

// Traffic that belongs to a daemon as a whole (registration, heartbeats,
// round ends) is booked under this client id.
constexpr int64_t kDaemonTraffic = -1;
// Control traffic is booked under this model id.
constexpr int64_t kNoModel = -1;

// Thread-compatible: a plain value.
struct ByteCounts {
  uint64_t payload_up = 0;
  uint64_t payload_down = 0;
  uint64_t control_up = 0;
  uint64_t control_down = 0;

  void Add(Direction dir, Traffic kind, uint64_t bytes);
  ByteCounts& operator+=(const ByteCounts& o);
  bool operator==(const ByteCounts& o) const;
  uint64_t control() const { return control_up + control_down; }
};

nlohmann::json ToJson(const ByteCounts& c);

// Thread-safe: gRPC handlers book concurrently.
class ByteLedger {
 public:
  void Add(int64_t round, int64_t client, int64_t model, Direction dir,
           Traffic kind, uint64_t bytes);

  std::map<int64_t, ByteCounts> ByClient(int64_t round) const;
  std::map<int64_t, ByteCounts> ByModel(int64_t round) const;
  ByteCounts RoundTotal(int64_t round) const;
  ByteCounts Total() const;

 private:
  struct Round {
    std::map<int64_t, ByteCounts> by_client;
    std::map<int64_t, ByteCounts> by_model;
  };
  mutable Mutex mu_;
  std::map<int64_t, Round> rounds_ ABSL_GUARDED_BY(mu_);
  ByteCounts total_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_COMMON_NET_ACCOUNTING_H_
