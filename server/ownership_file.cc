#include "server/ownership_file.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"

namespace shefl {

absl::Status SaveOwnership(const std::string& path,
                           const ClientRegistry::Ownership& o) {
  nlohmann::json clients = nlohmann::json::object();
  for (const auto& [id, who] : o.clients) clients[std::to_string(id)] = who;
  nlohmann::json j = {{"clients", clients}, {"names", o.names}};
  return WriteFileDurably(path, j.dump(1) + "\n", 0600);
}

absl::StatusOr<ClientRegistry::Ownership> LoadOwnership(const std::string& path) {
  if (!std::filesystem::exists(path))
    return absl::NotFoundError(absl::StrCat("no ownership file at '", path, "'"));
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("'", path, "': ", why));
  };
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  if (!j.is_object() || !j.contains("clients") || !j["clients"].is_object() ||
      !j.contains("names") || !j["names"].is_object())
    return bad("not an ownership record ({\"clients\": {...}, \"names\": {...}})");
  ClientRegistry::Ownership o;
  for (const auto& [key, who] : j["clients"].items()) {
    int64_t id = 0;
    if (!absl::SimpleAtoi(key, &id) || !who.is_string())
      return bad(absl::StrCat("client entry '", key, "' is not id: identity"));
    o.clients[id] = who.get<std::string>();
  }
  for (const auto& [name, who] : j["names"].items()) {
    if (!who.is_string())
      return bad(absl::StrCat("name entry '", name, "' has no identity"));
    o.names[name] = who.get<std::string>();
  }
  return o;
}

}  // namespace shefl
