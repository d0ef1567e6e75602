#include "server/source/distributed_privacy.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/core/status_macros.h"

namespace shefl {

namespace {

// The checkpoint: this header line, the accountants' JSON's length on a
// line, the JSON, then the secure sums' own state as it is.
constexpr char kStateHeader[] = "shefl distributed privacy state 1\n";

}  // namespace

DistributedPrivacy::DistributedPrivacy(CoordinatorState* state,
                                       std::unique_ptr<UpdateSource> inner)
    : WrappingSource(std::move(inner)), state_(state), ledger_(state->config) {
  state_->metrics.SetPrivacy(0, state->config.privacy.clip);
}

// Every round whose sessions were set up is charged, whatever came of
// them: the parties added their noise for it.
void DistributedPrivacy::BeforePublish(std::vector<ModelAggregator>& aggregators) {
  inner().BeforePublish(aggregators);
  ledger_.Compose();
  const PrivacySpent spent = ledger_.Spent();
  const PrivacyConfig& p = state_->config.privacy;
  line_ = {{"clip", p.clip},
           {"noise_multiplier", p.noise_multiplier},
           {"epsilon", spent.epsilon},
           {"delta", ledger_.delta()},
           {"order", spent.order}};
  state_->metrics.SetPrivacy(spent.epsilon, p.clip);
}

void DistributedPrivacy::AddFields(int64_t round, nlohmann::json* line) const {
  inner().AddFields(round, line);
  (*line)["epsilon"] = line_.value("epsilon", 0.0);
  (*line)["privacy"] = line_;
}

void DistributedPrivacy::AddSummary(nlohmann::json* summary) const {
  inner().AddSummary(summary);
  nlohmann::json privacy = ledger_.Summary();
  privacy["clip"] = state_->config.privacy.clip;
  (*summary)["epsilon"] = privacy["epsilon"];
  (*summary)["privacy"] = std::move(privacy);
}

std::string DistributedPrivacy::SaveState(int64_t round) const {
  const std::string j =
      nlohmann::json{{"round", round}, {"tiers", ledger_.Save()}}.dump();
  return absl::StrCat(kStateHeader, j.size(), "\n", j, inner().SaveState(round));
}

absl::Status DistributedPrivacy::LoadState(const std::string& bytes,
                                           int64_t round) {
  const std::string header = kStateHeader;
  if (bytes.compare(0, header.size(), header) != 0)
    return PrivacyStateLost(round, "not a distributed privacy state");
  const size_t eol = bytes.find('\n', header.size());
  size_t length = 0;
  if (eol == std::string::npos ||
      !absl::SimpleAtoi(bytes.substr(header.size(), eol - header.size()), &length) ||
      length > bytes.size() - eol - 1)
    return PrivacyStateLost(round, "its length line is damaged");
  const nlohmann::json j =
      nlohmann::json::parse(bytes.substr(eol + 1, length), nullptr, false);
  if (!j.is_object() || !j.contains("tiers") || !j.contains("round"))
    return PrivacyStateLost(round, "not the expected JSON object");
  if (j["round"] != round)
    return PrivacyStateLost(round, absl::StrCat("it is round ", j["round"].dump(), "'s"));
  SHEFL_RETURN_IF_ERROR(inner().LoadState(bytes.substr(eol + 1 + length), round));
  SHEFL_RETURN_IF_ERROR(ledger_.Load(j["tiers"], round));
  state_->metrics.SetPrivacy(ledger_.Spent().epsilon, state_->config.privacy.clip);
  return absl::OkStatus();
}

absl::Status DistributedPrivacy::StateMissing(int64_t round) const {
  if (round == 0) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(
      "privacy.mode distributed: round ", round,
      " has no privacy state beside its checkpoint; without it the run's "
      "epsilon cannot be known, so it does not resume"));
}

}  // namespace shefl
