// Fuzzes the config loader (common/core/config.h) with the text of a config
// file and `--set` overrides, as `shefl run` and the coordinator read them.
//
// Input: YAML text, optionally followed by a line "#--set" and one override
// a line. Whatever the loader accepts must satisfy the ranges it promises,
// and its resolved dump (results/config.yaml, which --resume reads back)
// must load again to the same config.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/core/config.h"
#include "common/fed/config_load.h"
#include "common/fed/methods/registry.h"
#include "fuzz/fuzz_check.h"

namespace shefl {
namespace {

constexpr char kSetMarker[] = "\n#--set\n";

void CheckRanges(const ExperimentConfig& c) {
  FUZZ_CHECK(c.rounds >= 1);
  FUZZ_CHECK(c.model.num_models >= 1 && c.model.num_models <= 1024);
  FUZZ_CHECK(c.clients.num_hpc <= c.clients.num_clients);
  FUZZ_CHECK(c.clients.per_round_hpc + c.clients.per_round_lpc > 0);
  FUZZ_CHECK(c.clients.min_connected <= c.clients.num_clients);
  FUZZ_CHECK(c.compression.density > 0 && c.compression.density <= 1);
  FUZZ_CHECK(c.train.lr > 0 && std::isfinite(c.train.lr));
  FUZZ_CHECK(c.train.batch_size >= 1);
  FUZZ_CHECK(c.train.local_steps > 0 || c.train.local_epochs > 0);
  FUZZ_CHECK(!std::isnan(c.partition.alpha) && c.partition.alpha > 0);
  FUZZ_CHECK(c.round_deadline_s > 0 && std::isfinite(c.round_deadline_s));
  FUZZ_CHECK(ResourceRatio(c) > 0);
  FUZZ_CHECK(FindMethod(c.method).ok());
  if (!MethodHasTiers(c.method)) FUZZ_CHECK(c.aggregation.rule == "uniform");
}

}  // namespace
}  // namespace shefl

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace shefl;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t marker = input.find(kSetMarker);
  const std::string yaml = input.substr(0, marker);
  std::vector<std::string> overrides;
  if (marker != std::string::npos)
    overrides = absl::StrSplit(input.substr(marker + sizeof kSetMarker - 1),
                               '\n', absl::SkipEmpty());
  auto config = ParseConfigWithOverrides(yaml, "fuzz.yaml", overrides);
  if (!config.ok()) {
    FUZZ_CHECK(config.status().code() == absl::StatusCode::kInvalidArgument);
    FUZZ_CHECK(!config.status().message().empty());
    return 0;
  }
  CheckRanges(*config);
  const std::string dump = ConfigToYaml(*config);
  auto again = ParseConfig(dump, "config.yaml");
  if (!again.ok()) {
    std::fprintf(stderr, "dump does not load: %s\n%s",
                 std::string(again.status().message()).c_str(), dump.c_str());
  }
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(ConfigToYaml(*again) == dump);
  return 0;
}
