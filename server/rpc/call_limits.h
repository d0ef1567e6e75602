// Bounds on the calls one peer may have open at once: per host (the
// address a connection comes from) and per identity (a certificate's CN or
// a daemon's own token; the shared token and "anonymous" are no one in
// particular and are bounded by host only). gRPC caps streams per
// connection; this caps what many connections from one place, or one
// daemon's credentials used from many places, can hold. A call past a
// bound is refused at its start as `busy` and holds nothing.
// Thread-safe: every method takes mu_.
#ifndef SHEFL_SERVER_RPC_CALL_LIMITS_H_
#define SHEFL_SERVER_RPC_CALL_LIMITS_H_

#include <map>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/core/mutex.h"

namespace shefl {

class CallLimits {
 public:
  // A host's daemons (ten on one machine under `shefl run`) hold a feed,
  // a heartbeat and a few transfers each; a daemon a handful. The bounds
  // are far above that and far below what exhausts memory or descriptors.
  static constexpr int kDefaultPerHost = 2048;
  static constexpr int kDefaultPerIdentity = 256;

  CallLimits(int per_host, int per_identity)
      : per_host_(per_host), per_identity_(per_identity) {}

  // One open call; leaving its scope ends it. Movable, not copyable.
  class Slot {
   public:
    Slot(Slot&& other) noexcept;
    Slot& operator=(Slot&&) = delete;
    Slot(const Slot&) = delete;
    ~Slot();

   private:
    friend class CallLimits;
    Slot(CallLimits* owner, std::string host, std::string identity)
        : owner_(owner), host_(std::move(host)), identity_(std::move(identity)) {}
    CallLimits* owner_;
    std::string host_, identity_;  // identity_ empty: not counted
  };

  // A slot for a call from `peer` (gRPC's form, "ipv4:10.0.0.5:41234") by
  // `identity`, or RESOURCE_EXHAUSTED (reason `busy`) naming the bound.
  absl::StatusOr<Slot> Enter(std::string_view peer, const std::string& identity);

  // Calls open now from `peer`'s host (for tests and metrics).
  int OpenFromHost(std::string_view peer) const;

  // "ipv4:10.0.0.5:41234" -> "ipv4:10.0.0.5", "ipv6:[::1]:5" -> "ipv6:[::1]".
  static std::string HostOf(std::string_view peer);

 private:
  void Leave(const std::string& host, const std::string& identity);

  const int per_host_, per_identity_;
  mutable Mutex mu_;
  std::map<std::string, int> hosts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> identities_ ABSL_GUARDED_BY(mu_);
};

}  // namespace shefl

#endif  // SHEFL_SERVER_RPC_CALL_LIMITS_H_
