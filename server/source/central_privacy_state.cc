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
  j["tiers"] = ledger_.Save();
  return j.dump();
}

absl::Status CentralPrivacy::LoadState(const std::string& bytes, int64_t round) {
  const nlohmann::json j = nlohmann::json::parse(bytes, nullptr, false);
  if (!j.is_object() || !j.contains("tiers") || !j.contains("clip") ||
      !j["clip"].is_number() || !j.contains("round"))
    return PrivacyStateLost(round, "not the expected JSON object");
  if (j["round"] != round)
    return PrivacyStateLost(round, absl::StrCat("it is round ", j["round"].dump(), "'s"));
  SHEFL_RETURN_IF_ERROR(ledger_.Load(j["tiers"], round));
  clip_ = j["clip"].get<double>();
  state_->metrics.SetPrivacy(ledger_.Spent().epsilon, clip_);
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
