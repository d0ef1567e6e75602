#include "cli/endpoints.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"

namespace shefl {

nlohmann::json EndpointsToJson(const Endpoints& e) {
  nlohmann::json daemons = nlohmann::json::array();
  for (const DaemonEndpoint& d : e.daemons) {
    daemons.push_back({{"name", d.name}, {"pid", d.pid}, {"metrics", d.metrics}});
  }
  return {{"coordinator", {{"grpc", e.grpc}, {"metrics", e.metrics}}},
          {"daemons", daemons},
          {"coordinator_pid", e.coordinator_pid}};
}

absl::Status WriteJsonAtomically(const std::string& path,
                                 const nlohmann::json& value) {
  return WriteFileDurably(path, value.dump(2) + "\n");
}

}  // namespace shefl
