#include "cli/endpoints.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

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
  std::string tmp = absl::StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << value.dump(2) << "\n";
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = strerror(errno);
    std::remove(tmp.c_str());
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", err));
  }
  return absl::OkStatus();
}

}  // namespace shefl
