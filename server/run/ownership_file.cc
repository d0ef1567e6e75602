#include "server/run/ownership_file.h"

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/core/durable_file.h"

namespace shefl {

absl::Status SaveOwnership(const std::string& path,
                           const ClientRegistry::Ownership& o) {
  nlohmann::json j = {{"identities", o.identities},
                      {"client_owner", o.client_owner},
                      {"names", o.names}};
  return WriteFileDurably(path, j.dump() + "\n", 0600);
}

namespace {

// The earlier form, {"clients": {"<id>": identity}}: identities interned.
absl::Status ReadClientsByIdentity(const nlohmann::json& clients,
                                   ClientRegistry::Ownership* o,
                                   const std::function<absl::Status(
                                       const std::string&)>& bad) {
  std::map<std::string, int32_t> index;
  for (const auto& [key, who] : clients.items()) {
    int64_t id = 0;
    if (!absl::SimpleAtoi(key, &id) || id < 0 || id >= (int64_t{1} << 31) ||
        !who.is_string())
      return bad(absl::StrCat("client entry '", key, "' is not id: identity"));
    auto [it, fresh] = index.emplace(who.get<std::string>(),
                                     static_cast<int32_t>(o->identities.size()));
    if (fresh) o->identities.push_back(it->first);
    if (static_cast<size_t>(id) >= o->client_owner.size())
      o->client_owner.resize(id + 1, -1);
    o->client_owner[id] = it->second;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClientRegistry::Ownership> LoadOwnership(const std::string& path) {
  if (!std::filesystem::exists(path))
    return absl::NotFoundError(absl::StrCat("no ownership file at '", path, "'"));
  auto bad = [&](const std::string& why) {
    return absl::DataLossError(absl::StrCat("'", path, "': ", why));
  };
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in, nullptr, false);
  const bool compact = j.is_object() && j.contains("identities") &&
                       j["identities"].is_array() && j.contains("client_owner") &&
                       j["client_owner"].is_array();
  const bool earlier = j.is_object() && j.contains("clients") &&
                       j["clients"].is_object();
  if ((!compact && !earlier) || !j.contains("names") || !j["names"].is_object())
    return bad("not an ownership record ({\"identities\": [...], "
               "\"client_owner\": [...], \"names\": {...}})");
  ClientRegistry::Ownership o;
  if (compact) {
    for (const auto& who : j["identities"]) {
      if (!who.is_string()) return bad("an identity is not a string");
      o.identities.push_back(who.get<std::string>());
    }
    const int64_t n = static_cast<int64_t>(o.identities.size());
    for (const auto& i : j["client_owner"]) {
      if (!i.is_number_integer() || i.get<int64_t>() < -1 || i.get<int64_t>() >= n)
        return bad(absl::StrCat("client ", o.client_owner.size(),
                                ": owner is not an identity index"));
      o.client_owner.push_back(static_cast<int32_t>(i.get<int64_t>()));
    }
  } else if (auto st = ReadClientsByIdentity(j["clients"], &o, bad); !st.ok()) {
    return st;
  }
  for (const auto& [name, who] : j["names"].items()) {
    if (!who.is_string())
      return bad(absl::StrCat("name entry '", name, "' has no identity"));
    o.names[name] = who.get<std::string>();
  }
  return o;
}

}  // namespace shefl
