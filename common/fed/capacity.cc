#include "common/fed/capacity.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace shefl {
namespace {

// floor(x), except that x within 1e-9 (relative) of an integer counts as
// that integer: 0.6 * 5 is 3 models, not the 2 of its binary value.
int64_t TolerantFloor(long double x) {
  const long double nearest = std::nearbyint(x);
  if (std::fabs(x - nearest) <= 1e-9L * std::max<long double>(1, std::fabs(x)))
    return static_cast<int64_t>(nearest);
  return static_cast<int64_t>(std::floor(x));
}

}  // namespace

std::vector<int64_t> RotatingModels(double capacity, int64_t round,
                                    int64_t offset, int64_t num_models) {
  std::vector<int64_t> models;
  const int64_t M = std::max<int64_t>(num_models, 1);
  if (!(capacity > 0)) return models;
  if (capacity >= static_cast<double>(M) - 1e-9) {
    for (int64_t m = 0; m < M; ++m) models.push_back(m);
    return models;
  }
  const long double c = capacity;
  const long double pos = static_cast<long double>(round) + offset;
  const int64_t x0 = TolerantFloor(c * pos);
  const int64_t x1 = TolerantFloor(c * (pos + 1));
  const int64_t n = std::clamp<int64_t>(x1 - x0, 0, M);
  for (int64_t j = 0; j < n; ++j) models.push_back(((x0 + j) % M + M) % M);
  std::sort(models.begin(), models.end());
  return models;
}

absl::StatusOr<std::vector<int64_t>> ParseCapacityLevels(
    const std::string& text, int64_t num_models) {
  std::vector<int64_t> levels;
  if (absl::StripAsciiWhitespace(text).empty()) return levels;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1 || v > num_models)
      return absl::InvalidArgumentError(absl::StrCat(
          "key 'clients.hpc_capacity': '", part,
          "' is not a capacity level in [1, model.num_models = ", num_models,
          "] (give one level, or several separated by commas)"));
    levels.push_back(v);
  }
  return levels;
}

int64_t ConfiguredHpcCapacity(const std::vector<int64_t>& levels,
                              int64_t client_id, int64_t num_models) {
  if (levels.empty() || client_id < 0) return num_models;
  return levels[static_cast<size_t>(client_id) % levels.size()];
}

}  // namespace shefl
