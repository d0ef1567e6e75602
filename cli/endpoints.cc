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
          {"coordinator_pid", e.coordinator_pid},
          {"launcher_pid", e.launcher_pid}};
}

absl::StatusOr<Endpoints> ReadEndpoints(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  auto str = [](const nlohmann::json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_string();
  };
  auto pid = [](const nlohmann::json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_number_integer();
  };
  if (!j.is_object() || !str(j.value("coordinator", nlohmann::json()), "grpc") ||
      !str(j["coordinator"], "metrics") || !pid(j, "coordinator_pid") ||
      !j.value("daemons", nlohmann::json()).is_array())
    return absl::DataLossError(absl::StrCat(
        path, " is not an endpoints file (coordinator.grpc, coordinator.metrics, "
              "coordinator_pid, daemons)"));
  Endpoints e;
  e.grpc = j["coordinator"]["grpc"].get<std::string>();
  e.metrics = j["coordinator"]["metrics"].get<std::string>();
  e.coordinator_pid = j["coordinator_pid"].get<int>();
  if (pid(j, "launcher_pid")) e.launcher_pid = j["launcher_pid"].get<int>();
  for (const nlohmann::json& d : j["daemons"]) {
    if (!str(d, "name") || !pid(d, "pid") || !str(d, "metrics"))
      return absl::DataLossError(
          absl::StrCat(path, ": a daemon without name, pid and metrics"));
    e.daemons.push_back({d["name"].get<std::string>(), d["pid"].get<int>(),
                         d["metrics"].get<std::string>()});
  }
  return e;
}

absl::Status WriteJsonAtomically(const std::string& path,
                                 const nlohmann::json& value) {
  return WriteFileDurably(path, value.dump(2) + "\n");
}

}  // namespace shefl
