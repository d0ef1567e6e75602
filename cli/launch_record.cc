#include "cli/launch_record.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"

namespace shefl {

std::string LaunchRecordPath(const std::string& run_dir) {
  return run_dir + "/launch.json";
}

absl::Status SaveLaunch(const std::string& run_dir, const RunArgs& a,
                        int daemons, int threads) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec)
    return absl::InternalError(
        absl::StrCat("cannot create '", run_dir, "': ", ec.message()));
  const nlohmann::json j = {{"daemons", daemons},       {"threads", threads},
                            {"device", a.device},       {"insecure", a.insecure},
                            {"capacity", a.capacity},   {"max_restarts", a.max_restarts},
                            {"python_clients", a.python_clients},
                            {"python_script", a.python_script},
                            {"python", a.python}};
  return WriteFileDurably(LaunchRecordPath(run_dir), j.dump(1) + "\n", 0644);
}

absl::Status RestoreLaunch(const std::string& run_dir, RunArgs* a) {
  const std::string path = LaunchRecordPath(run_dir);
  if (!std::filesystem::exists(path)) return absl::OkStatus();
  std::ifstream in(path);
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  auto bad = [&] {
    return absl::DataLossError(absl::StrCat(
        path, ": not a launch record (daemons, threads, device, insecure, "
              "capacity, max_restarts); repair or remove it"));
  };
  if (!j.is_object() || !j.value("daemons", nlohmann::json()).is_number_integer() ||
      !j.value("threads", nlohmann::json()).is_number_integer() ||
      !j.value("device", nlohmann::json()).is_string() ||
      !j.value("insecure", nlohmann::json()).is_boolean() ||
      !j.value("capacity", nlohmann::json()).is_array() ||
      !j.value("max_restarts", nlohmann::json()).is_number_integer())
    return bad();
  for (const auto& c : j["capacity"])
    if (!c.is_number_integer()) return bad();
  if (a->daemons == 0) a->daemons = j["daemons"].get<int>();
  if (a->threads == 0) a->threads = j["threads"].get<int>();
  if (a->device.empty()) a->device = j["device"].get<std::string>();
  if (a->capacity.empty()) a->capacity = j["capacity"].get<std::vector<int>>();
  // Records from before the Python client have none of these.
  for (auto [key, field] : {std::pair{"python_clients", &a->python_clients},
                            std::pair{"python_script", &a->python_script},
                            std::pair{"python", &a->python}})
    if (field->empty() && j.value(key, nlohmann::json()).is_string())
      *field = j[key].get<std::string>();
  // Plaintext stays plaintext: a resumed run under new certificates would
  // be a stranger to the identities that own its clients.
  a->insecure = a->insecure || j["insecure"].get<bool>();
  return absl::OkStatus();
}

}  // namespace shefl
