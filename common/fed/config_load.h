// Loading an experiment config: the keys as read (common/core/config.h),
// then the method's presets and refusals (common/fed/methods/), then the
// checks that involve more than one key. Every binary and tool loads its
// config here. Pure functions; thread-safe.
#ifndef SHEFL_COMMON_FED_CONFIG_LOAD_H_
#define SHEFL_COMMON_FED_CONFIG_LOAD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/core/config.h"

namespace shefl {

// Parses YAML text; `source` names the file in error messages.
absl::StatusOr<ExperimentConfig> ParseConfig(const std::string& yaml_text,
                                             const std::string& source);

// Parses YAML text, then applies "dotted.key=value" overrides in order
// (values are YAML scalars: `--set rounds=3`, `--set data.dataset=mnist`).
// Method presets fill keys the file and overrides left unset (section 2:
// fedavg has one model, fedprox mu = 0.01, baselines aggregate uniformly
// and upload dense deltas). An unknown method or model.name is refused
// with the known names; keys the method needs otherwise are listed at
// once, with the --set flags that fix them.
absl::StatusOr<ExperimentConfig> ParseConfigWithOverrides(
    const std::string& yaml_text, const std::string& source,
    const std::vector<std::string>& overrides);

// Reads `path` and calls ParseConfigWithOverrides.
absl::StatusOr<ExperimentConfig> LoadConfig(
    const std::string& path, const std::vector<std::string>& overrides = {});

}  // namespace shefl

#endif  // SHEFL_COMMON_FED_CONFIG_LOAD_H_
