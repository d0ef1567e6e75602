#include "common/fed/robust.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace shefl {

absl::Status CheckMagnitude(const SparseDelta& delta, double max_abs) {
  for (size_t i = 0; i < delta.values.size(); ++i) {
    const float v = delta.values[i];
    if (!std::isfinite(v) || (max_abs > 0 && std::fabs(v) > max_abs))
      return absl::InvalidArgumentError(absl::StrCat(
          "value ", v, " at index ", delta.indices[i],
          " is beyond robust.max_abs = ", max_abs));
  }
  return absl::OkStatus();
}

double L2Norm(const SparseDelta& delta) {
  double sum = 0;
  for (float v : delta.values) sum += static_cast<double>(v) * v;
  return std::sqrt(sum);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  const double lower = *std::max_element(v.begin(), v.begin() + mid);
  return (lower + upper) / 2;
}

namespace {

// The bound an update of norm `norm` is scaled down to (infinity: none).
double ClipBound(const RobustConfig& cfg, double median) {
  double bound = std::numeric_limits<double>::infinity();
  if (cfg.clip_multiple > 0 && median > 0)
    bound = std::min(bound, cfg.clip_multiple * median);
  if (cfg.norm_bound > 0) bound = std::min(bound, cfg.norm_bound);
  return bound;
}

}  // namespace

RobustCounts ApplyRobustBounds(const RobustConfig& cfg,
                               std::vector<ModelAggregator>* aggregators) {
  RobustCounts out;
  // Every update's norm once, in aggregator then update order.
  std::vector<double> norms;
  for (ModelAggregator& agg : *aggregators)
    for (const ReceivedUpdate& u : agg.updates()) norms.push_back(L2Norm(u.delta));
  // fixed_point keeps no update, only the norms (reported; the bounds that
  // would change an update are refused with it at config load).
  std::vector<double> all = norms;
  for (ModelAggregator& agg : *aggregators)
    all.insert(all.end(), agg.streamed_norms().begin(),
               agg.streamed_norms().end());
  if (all.empty()) return out;
  size_t next = 0;
  out.median_norm = Median(all);
  out.max_norm = *std::max_element(all.begin(), all.end());
  const double refuse = cfg.refuse_multiple > 0 && out.median_norm > 0
                            ? cfg.refuse_multiple * out.median_norm
                            : std::numeric_limits<double>::infinity();
  const double clip = ClipBound(cfg, out.median_norm);
  for (ModelAggregator& agg : *aggregators) {
    std::vector<ReceivedUpdate>* updates = agg.mutable_updates();
    std::vector<ReceivedUpdate> kept;
    kept.reserve(updates->size());
    for (ReceivedUpdate& u : *updates) {
      const double norm = norms[next++];
      if (norm > refuse) {
        ++out.refused_norm;
        continue;
      }
      if (norm > clip) {
        const double scale = clip / norm;
        for (float& v : u.delta.values)
          v = static_cast<float>(static_cast<double>(v) * scale);
        ++out.clipped_norm;
      }
      kept.push_back(std::move(u));
    }
    *updates = std::move(kept);
    out.trimmed_values += TrimCoordinates(cfg.trim, updates);
  }
  return out;
}

int64_t TrimCoordinates(double trim, std::vector<ReceivedUpdate>* updates) {
  const size_t n = updates->size();
  const size_t b = static_cast<size_t>(std::floor(trim * static_cast<double>(n)));
  if (b == 0 || n == 0) return 0;
  // Every sent value as (coordinate, sender, position), grouped by
  // coordinate.
  struct Entry {
    uint32_t index, sender, pos;
  };
  std::vector<Entry> entries;
  for (size_t s = 0; s < n; ++s) {
    const SparseDelta& d = (*updates)[s].delta;
    for (size_t p = 0; p < d.nnz(); ++p)
      entries.push_back({d.indices[p], static_cast<uint32_t>(s),
                         static_cast<uint32_t>(p)});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& c) { return a.index < c.index; });
  int64_t moved = 0;
  std::vector<float> values;
  for (size_t i = 0; i < entries.size();) {
    size_t j = i;
    values.clear();
    for (; j < entries.size() && entries[j].index == entries[i].index; ++j)
      values.push_back((*updates)[entries[j].sender].delta.values[entries[j].pos]);
    values.resize(n, 0.0f);  // the senders that sent nothing here
    std::sort(values.begin(), values.end());
    const float lo = values[b], hi = values[n - 1 - b];
    for (size_t e = i; e < j; ++e) {
      float& v = (*updates)[entries[e].sender].delta.values[entries[e].pos];
      const float c = std::clamp(v, lo, hi);
      moved += c != v;
      v = c;
    }
    i = j;
  }
  return moved;
}

}  // namespace shefl
