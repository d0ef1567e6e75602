// What the registry fuzzer knows independently of ClientRegistry: every
// session handed out, who first registered each client, the first shard
// size of each, and the registry's observable state, so that each call's
// outcome and the state after it can be checked against the rules of
// server/state/client_registry.h.
#ifndef SHEFL_FUZZ_REGISTRY_MODEL_H_
#define SHEFL_FUZZ_REGISTRY_MODEL_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "server/state/client_registry.h"
#include "server/state/client_reports.h"

namespace shefl {

class RegistryModel {
 public:
  RegistryModel(ClientRegistry* registry, int64_t num_clients)
      : registry_(registry), n_(num_clients) {}

  // Each makes the call, checks its outcome and, when refused, that
  // nothing changed. `handle` picks one of the sessions ever returned
  // (live or replaced), modulo their number.
  void Register(const v1::RegisterRequest& req, const std::string& identity);
  void ReportShardSize(size_t handle, int64_t client, uint64_t num_samples);
  void SetFeedOpen(size_t handle, bool open);

  // The rules that hold between calls.
  void CheckInvariants() const;

 private:
  // Everything a caller of the registry can observe.
  struct Snapshot {
    std::vector<std::string> sessions;  // one line per live session
    std::vector<std::string> owners;    // session id per client id, or ""
    std::vector<double> shard_sizes;
    std::vector<bool> closed;           // each handle's feed
    int64_t connected = 0;
    bool operator==(const Snapshot& o) const;
  };
  Snapshot Observe() const;
  // The codes a Register may be refused with, given the model's state;
  // empty when it must succeed.
  std::set<absl::StatusCode> RegisterRefusals(
      const v1::RegisterRequest& req, const std::string& identity) const;
  void CheckRegistered(const DaemonSession& s, const v1::RegisterRequest& req,
                       const Snapshot& before) const;

  ClientRegistry* const registry_;
  ClientReports reports_;  // what the registered clients report
  const int64_t n_;
  std::vector<std::shared_ptr<DaemonSession>> handles_;
  std::map<int64_t, std::string> client_identity_;  // first registrant
  // The first registrant of each daemon name: a name stays its identity's
  // after its session is replaced (durable ownership).
  std::map<std::string, std::string> name_identity_;
  std::map<int64_t, uint64_t> shard_size_;          // first accepted report
};

}  // namespace shefl

#endif  // SHEFL_FUZZ_REGISTRY_MODEL_H_
