#include "server/source/privacy_ledger.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/privacy/round_rdp.h"

namespace shefl {

PrivacyLedger::PrivacyLedger(const ExperimentConfig& c)
    : privacy_(c.privacy), delta_(PrivacyDelta(c)), tiers_(PrivacyTiers(c)) {
  for (const SampledTier& t : tiers_) {
    step_rdp_.push_back(RoundRdp(c, c.privacy.noise_multiplier, t.q));
    accountants_.emplace_back();
  }
}

void PrivacyLedger::Compose() {
  for (size_t i = 0; i < accountants_.size(); ++i)
    accountants_[i].Compose(step_rdp_[i]);
}

PrivacySpent PrivacyLedger::SpentAfter(int64_t more) const {
  PrivacySpent worst{0, 0};
  for (size_t i = 0; i < accountants_.size(); ++i) {
    if (tiers_[i].q <= 0) continue;
    RdpAccountant a = accountants_[i];
    if (more > 0) a.Compose(step_rdp_[i], more);
    const PrivacySpent s = a.Spent(delta_);
    if (s.epsilon > worst.epsilon) worst = s;
  }
  return worst;
}

std::string PrivacyLedger::StopBefore(int64_t round) const {
  const double target = privacy_.target_epsilon;
  if (target <= 0) return "";
  const PrivacySpent next = SpentAfter(1);
  if (next.epsilon <= target) return "";
  stop_reason_ = absl::StrFormat(
      "privacy.target_epsilon %g: round %d would take epsilon from %.4f to "
      "%.4f (delta %.3g); the run stops after round %d",
      target, round, Spent().epsilon, next.epsilon, delta_, round - 1);
  return stop_reason_;
}

nlohmann::json PrivacyLedger::Summary() const {
  const PrivacySpent spent = Spent();
  nlohmann::json tiers = nlohmann::json::array();
  for (const SampledTier& t : tiers_)
    tiers.push_back({{"tier", t.name}, {"clients", t.clients},
                     {"cohort", t.cohort}, {"q", t.q}});
  return {{"mode", privacy_.mode},
          {"epsilon", spent.epsilon},
          {"delta", delta_},
          {"order", spent.order},
          {"noise_multiplier", privacy_.noise_multiplier},
          {"target_epsilon", privacy_.target_epsilon},
          {"tiers", tiers},
          {"stopped", stop_reason_}};
}

nlohmann::json PrivacyLedger::Save() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < tiers_.size(); ++i)
    out.push_back({{"tier", tiers_[i].name}, {"accountant", accountants_[i].Save()}});
  return out;
}

absl::Status PrivacyLedger::Load(const nlohmann::json& tiers, int64_t round) {
  if (!tiers.is_array())
    return PrivacyStateLost(round, "its tiers are not a list");
  if (tiers.size() != tiers_.size())
    return PrivacyStateLost(round, absl::StrCat(tiers.size(), " tiers, the config has ",
                                                tiers_.size()));
  std::vector<RdpAccountant> loaded;
  for (size_t i = 0; i < tiers_.size(); ++i) {
    const nlohmann::json& t = tiers[i];
    if (!t.is_object() || t.value("tier", "") != tiers_[i].name ||
        !t.contains("accountant") || !t["accountant"].is_string())
      return PrivacyStateLost(round, absl::StrCat("tier ", i, " is not ", tiers_[i].name));
    auto a = RdpAccountant::Load(t["accountant"].get<std::string>());
    if (!a.ok()) return PrivacyStateLost(round, std::string(a.status().message()));
    loaded.push_back(std::move(*a));
  }
  accountants_ = std::move(loaded);
  return absl::OkStatus();
}

absl::Status PrivacyStateLost(int64_t round, const std::string& what) {
  return absl::DataLossError(absl::StrCat(
      "privacy state of round ", round, ": ", what,
      "; the run's epsilon cannot be known, so it does not resume"));
}

}  // namespace shefl
