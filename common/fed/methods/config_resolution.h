// What a method sees of the config while it resolves it: the values, which
// keys the user set and where, and a book of conflicts. Pinning a key the
// user set to another value is not an error at once: every conflict is
// gathered so that one message lists them all with the exact --set flags
// (`shefl run configs/quick.yaml --set method=fedavg` names both
// model.num_models and aggregation.rule). Not thread-safe; one per load.
#ifndef SHEFL_COMMON_FED_METHODS_CONFIG_RESOLUTION_H_
#define SHEFL_COMMON_FED_METHODS_CONFIG_RESOLUTION_H_

#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/core/config.h"

namespace shefl {

class ConfigResolution {
 public:
  explicit ConfigResolution(ParsedConfig* parsed) : p_(parsed) {}

  ExperimentConfig& config() { return p_->config; }
  const ExperimentConfig& config() const { return p_->config; }
  bool IsSet(const std::string& key) const;

  // Sets `key` to `value` (YAML scalar text) when the user left it unset.
  void Preset(const std::string& key, const std::string& value);
  // The method needs `key` == `value`: set when unset, a conflict (with
  // `why`) when set to anything else.
  void Pin(const std::string& key, const std::string& value,
           const std::string& why);
  // A refusal that no single value fixes: `key` is wrong because `why`;
  // placed where `key` was set, else where the first of `related` was.
  void Refuse(const std::string& key, const std::string& why,
              std::initializer_list<const char*> related = {});

  // The first refusal, else all pin conflicts as one InvalidArgument, else
  // OK.
  absl::Status Result() const;

  // "file:line" where `key` was set, else where the first of `related`
  // was, else the config's source.
  std::string Where(const std::string& key,
                    std::initializer_list<const char*> related = {}) const;

 private:
  struct Conflict {
    std::string key, value, why;
  };
  ParsedConfig* p_;
  std::vector<Conflict> conflicts_;
  absl::Status refusal_;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_METHODS_CONFIG_RESOLUTION_H_
