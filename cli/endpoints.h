// endpoints.json: where the processes of a `shefl run` listen and their
// pids, so scripts and tests can scrape and signal them (docs/DESIGN.md, "The
// contract").
#ifndef SHEFL_CLI_ENDPOINTS_H_
#define SHEFL_CLI_ENDPOINTS_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace shefl {

struct DaemonEndpoint {
  std::string name;
  int pid = 0;
  std::string metrics;  // "127.0.0.1:R"
};

struct Endpoints {
  std::string grpc;     // coordinator "127.0.0.1:P"
  std::string metrics;  // coordinator "127.0.0.1:Q"
  int coordinator_pid = 0;
  std::vector<DaemonEndpoint> daemons;
  // The `shefl run` that started them (`shefl stop` signals it); 0 in a
  // file written before the key existed.
  int launcher_pid = 0;
};

// {"coordinator": {"grpc": .., "metrics": ..}, "daemons": [{"name": ..,
//  "pid": .., "metrics": ..}], "coordinator_pid": .., "launcher_pid": ..}
nlohmann::json EndpointsToJson(const Endpoints& endpoints);

// Reads a file EndpointsToJson wrote (launcher_pid may be absent); an
// error naming the file when it is missing or not of that shape.
absl::StatusOr<Endpoints> ReadEndpoints(const std::string& path);

// Writes `value` to `path` via a temp file in the same folder and rename,
// so a reader sees the old file or the new one, never half of one.
absl::Status WriteJsonAtomically(const std::string& path,
                                 const nlohmann::json& value);

}  // namespace shefl

#endif  // SHEFL_CLI_ENDPOINTS_H_
