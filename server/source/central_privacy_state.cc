// CentralPrivacy's checkpoint: each tier's accountant, bit for bit, and
// the clip, so a resumed run spends exactly what the run would have.
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"
#include "server/source/central_privacy.h"

namespace shefl {

std::string CentralPrivacy::SaveState(int64_t round) const {
  nlohmann::json j;
  j["round"] = round;
  j["clip"] = clip_;
  j["tiers"] = nlohmann::json::array();
  for (size_t i = 0; i < tiers_.size(); ++i)
    j["tiers"].push_back({{"tier", tiers_[i].name},
                          {"accountant", accountants_[i].Save()}});
  return j.dump();
}

absl::Status CentralPrivacy::LoadState(const std::string& bytes, int64_t round) {
  const auto bad = [&](const std::string& what) {
    return absl::DataLossError(absl::StrCat(
        "privacy state of round ", round, ": ", what,
        "; the run's epsilon cannot be known, so it does not resume"));
  };
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (!j.is_object() || !j.contains("tiers") || !j["tiers"].is_array() ||
      !j.contains("clip") || !j["clip"].is_number() || !j.contains("round"))
    return bad("not the expected JSON object");
  if (j["round"] != round)
    return bad(absl::StrCat("it is round ", j["round"].dump(), "'s"));
  if (j["tiers"].size() != tiers_.size())
    return bad(absl::StrCat(j["tiers"].size(), " tiers, the config has ",
                            tiers_.size()));
  std::vector<RdpAccountant> loaded;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    const nlohmann::json& t = j["tiers"][i];
    if (t.value("tier", "") != tiers_[i].name || !t.contains("accountant") ||
        !t["accountant"].is_string())
      return bad(absl::StrCat("tier ", i, " is not ", tiers_[i].name));
    auto a = RdpAccountant::Load(t["accountant"].get<std::string>());
    if (!a.ok()) return bad(std::string(a.status().message()));
    loaded.push_back(std::move(*a));
  }
  accountants_ = std::move(loaded);
  clip_ = j["clip"].get<double>();
  state_->metrics.SetPrivacy(Spent().epsilon, clip_);
  return absl::OkStatus();
}

absl::Status CentralPrivacy::StateMissing(int64_t round) const {
  if (round == 0) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      "privacy.mode ", state_->config.privacy.mode, ": round ", round,
      " has no privacy state beside its checkpoint; without it the run's "
      "epsilon cannot be known, so it does not resume"));
}

}  // namespace shefl
