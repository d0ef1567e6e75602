#include "common/fed/client_metrics.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/core/rng.h"

namespace shefl {

int64_t HeldOutCount(int64_t n, double fraction) {
  if (!(fraction > 0) || n < 2) return 0;
  const auto h = static_cast<int64_t>(std::llround(fraction * n));
  return std::min<int64_t>(n - 1, std::max<int64_t>(1, h));
}

absl::StatusOr<ClientSplit> SplitClientShard(
    const std::vector<int64_t>& shard, double fraction, uint64_t seed,
    int64_t client_id) {
  if (!(fraction >= 0 && fraction < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval.client_holdout must be in [0, 1), got ", fraction));
  }
  ClientSplit out;
  const int64_t h = HeldOutCount(static_cast<int64_t>(shard.size()), fraction);
  if (h == 0) {
    out.train = shard;
    return out;
  }
  std::vector<int64_t> order = shard;
  std::sort(order.begin(), order.end());
  auto rng = MakeRng(seed, SeedPurpose::kPartition,
                     {kHoldoutTag, static_cast<uint64_t>(client_id)});
  Shuffle(order, rng);
  out.held_out.assign(order.begin(), order.begin() + h);
  out.train.assign(order.begin() + h, order.end());
  std::sort(out.held_out.begin(), out.held_out.end());
  std::sort(out.train.begin(), out.train.end());
  return out;
}

double Quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double pos = q * static_cast<double>(values.size() - 1);
  const auto j = static_cast<size_t>(std::floor(pos));
  if (j + 1 >= values.size()) return values.back();
  const double t = pos - static_cast<double>(j);
  return values[j] + t * (values[j + 1] - values[j]);
}

ClientLevelSummary SummariseClients(const std::vector<double>& accuracy) {
  ClientLevelSummary s;
  s.clients = static_cast<int64_t>(accuracy.size());
  if (accuracy.empty()) return s;
  double sum = 0;
  for (double a : accuracy) sum += a;
  s.mean = sum / static_cast<double>(accuracy.size());
  s.worst = *std::min_element(accuracy.begin(), accuracy.end());
  s.p10 = Quantile(accuracy, 0.1);
  return s;
}

}  // namespace shefl
