// The config schema: one table binds every dotted key to its field, type,
// allowed range and a one-line description, so parsing, overrides, the
// resolved-config dump, the method presets and the configuration
// reference (`shefl config --reference`, docs/CONFIGURATION.md) all read
// the same list and cannot drift apart. Pure functions; thread-safe.
#ifndef SHEFL_COMMON_CORE_CONFIG_SCHEMA_H_
#define SHEFL_COMMON_CORE_CONFIG_SCHEMA_H_

#include <cstdint>
#include <limits>
#include <string>
#include <variant>
#include <vector>

#include "common/core/config.h"

namespace shefl {
namespace config_schema {

using Target =
    std::variant<std::string*, int64_t*, uint64_t*, double*, bool*>;

struct Field {
  std::string key;
  // One line for the reference: what the key does, its unit, and what 0
  // or empty means where that is special.
  std::string description;
  Target target;
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  // strings: allowed values (empty: any)
};

// Every key of `c`, in file order, each pointing into `c`.
std::vector<Field> Fields(ExperimentConfig& c);

// The field named `key`, or null.
const Field* FindField(const std::vector<Field>& fields, const std::string& key);

// True when some key starts with `prefix` + ".".
bool IsSection(const std::vector<Field>& fields, const std::string& prefix);

// " (did you mean 'x'?)" for the closest key, or "" when none is close.
std::string Hint(const std::string& key, const std::vector<Field>& fields);

}  // namespace config_schema
}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_CONFIG_SCHEMA_H_
