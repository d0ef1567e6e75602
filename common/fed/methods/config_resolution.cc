#include "common/fed/methods/config_resolution.h"

#include "absl/strings/str_cat.h"

namespace shefl {

bool ConfigResolution::IsSet(const std::string& key) const {
  return p_->origins.count(key) > 0;
}

std::string ConfigResolution::Where(
    const std::string& key, std::initializer_list<const char*> related) const {
  if (auto it = p_->origins.find(key); it != p_->origins.end())
    return it->second;
  for (const char* r : related)
    if (auto at = p_->origins.find(r); at != p_->origins.end())
      return at->second;
  return p_->source;
}

void ConfigResolution::Preset(const std::string& key,
                              const std::string& value) {
  if (IsSet(key)) return;
  // The method's own values are in range: a failure here is a bug in a
  // method file, reported like any refusal.
  if (absl::Status st = SetConfigValue(&p_->config, key, value,
                                       "method preset");
      !st.ok() && refusal_.ok())
    refusal_ = st;
}

void ConfigResolution::Pin(const std::string& key, const std::string& value,
                           const std::string& why) {
  if (!IsSet(key)) return Preset(key, value);
  ExperimentConfig probe = p_->config;
  if (!SetConfigValue(&probe, key, value, "").ok() ||
      ConfigValueText(probe, key) != ConfigValueText(p_->config, key))
    conflicts_.push_back({key, value, why});
}

void ConfigResolution::Refuse(const std::string& key, const std::string& why,
                              std::initializer_list<const char*> related) {
  if (!refusal_.ok()) return;
  refusal_ = absl::InvalidArgumentError(
      absl::StrCat(Where(key, related), ": key '", key, "': ", why));
}

absl::Status ConfigResolution::Result() const {
  if (!refusal_.ok()) return refusal_;
  if (conflicts_.empty()) return absl::OkStatus();
  const ExperimentConfig& c = p_->config;
  if (conflicts_.size() == 1) {
    const Conflict& k = conflicts_[0];
    return absl::InvalidArgumentError(absl::StrCat(
        Where(k.key), ": key '", k.key, "': ", k.why, "; got ",
        ConfigValueText(c, k.key), " (--set ", k.key, "=", k.value, ")"));
  }
  std::string msg = absl::StrCat("method ", c.method, " needs ",
                                 conflicts_.size(), " keys changed:");
  std::string flags;
  for (const Conflict& k : conflicts_) {
    absl::StrAppend(&msg, "\n  ", Where(k.key), ": key '", k.key, "' is ",
                    ConfigValueText(c, k.key), ": ", k.why);
    absl::StrAppend(&flags, " --set ", k.key, "=", k.value);
  }
  absl::StrAppend(&msg, "\nadd:", flags);
  return absl::InvalidArgumentError(msg);
}

}  // namespace shefl
