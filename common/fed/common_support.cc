#include "common/fed/common_support.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/core/rng.h"
#include "common/fed/vote_support.h"

namespace shefl {
namespace {

// The top `n` non-zero entries by magnitude, ties to the lower coordinate.
std::vector<uint32_t> TopByMagnitude(const std::vector<float>& a, uint64_t n) {
  std::vector<uint32_t> nonzero;
  for (uint32_t i = 0; i < a.size(); ++i)
    if (a[i] != 0 && std::isfinite(a[i])) nonzero.push_back(i);
  n = std::min<uint64_t>(n, nonzero.size());
  const auto before = [&a](uint32_t x, uint32_t y) {
    const float mx = std::fabs(a[x]), my = std::fabs(a[y]);
    return mx != my ? mx > my : x < y;
  };
  std::partial_sort(nonzero.begin(), nonzero.begin() + static_cast<int64_t>(n),
                    nonzero.end(), before);
  nonzero.resize(n);
  return nonzero;
}

// `n` more coordinates of [0, d), none of them already `taken`, uniformly
// without replacement: a partial Fisher-Yates over the ones left.
void DrawRest(uint64_t d, uint64_t n, std::mt19937_64& rng,
              std::vector<uint32_t>* taken) {
  std::vector<bool> used(d, false);
  for (uint32_t i : *taken) used[i] = true;
  std::vector<uint32_t> free;
  free.reserve(d - taken->size());
  for (uint32_t i = 0; i < d; ++i)
    if (!used[i]) free.push_back(i);
  for (uint64_t j = 0; j < n; ++j) {
    const uint64_t pick = j + UniformBelow(rng, free.size() - j);
    std::swap(free[j], free[pick]);
    taken->push_back(free[j]);
  }
}

// W: the small tensors, smallest first (ties by offset), each whole,
// while the total stays within `cap`. The first that does not fit gets
// what is left of the cap as a window that moves on by its length each
// round, so over rounds it is covered in turns (a last layer at 1%).
std::vector<uint32_t> WholeTensors(std::vector<TensorSpan> small,
                                   uint64_t cap, int64_t round) {
  std::sort(small.begin(), small.end(), [](const TensorSpan& a, const TensorSpan& b) {
    return a.numel != b.numel ? a.numel < b.numel : a.offset < b.offset;
  });
  std::vector<uint32_t> out;
  for (const TensorSpan& t : small) {
    if (out.size() + t.numel <= cap) {
      for (uint64_t i = 0; i < t.numel; ++i)
        out.push_back(static_cast<uint32_t>(t.offset + i));
      continue;
    }
    const uint64_t left = cap - out.size();
    const uint64_t start =
        (static_cast<uint64_t>(std::max<int64_t>(round - 1, 0)) * left) % t.numel;
    for (uint64_t i = 0; i < left; ++i)
      out.push_back(static_cast<uint32_t>(t.offset + (start + i) % t.numel));
    break;
  }
  return out;
}

}  // namespace

std::vector<uint32_t> CommonSupport(const std::vector<float>& accumulator,
                                    const SupportChoice& choice) {
  const uint64_t d = accumulator.size();
  const uint64_t k = std::min<uint64_t>(choice.k, d);
  const double explore = std::clamp(choice.explore_fraction, 0.0, 1.0);
  const uint64_t drawn = static_cast<uint64_t>(std::llround(explore * static_cast<double>(k)));
  std::vector<uint32_t> support = TopByMagnitude(accumulator, k - drawn);
  std::mt19937_64 rng = MakeRng(choice.seed, SeedPurpose::kSecureSupport,
                                {static_cast<uint64_t>(choice.round), choice.model});
  DrawRest(d, k - support.size(), rng, &support);
  std::sort(support.begin(), support.end());
  return support;
}

std::vector<uint32_t> LayoutSupport(const std::vector<float>& accumulator,
                                    std::vector<TensorSpan> small,
                                    double explore_floor,
                                    const SupportChoice& choice,
                                    const SupportVote* vote) {
  const uint64_t d = accumulator.size();
  const uint64_t k = std::min<uint64_t>(choice.k, d);
  std::vector<uint32_t> support = WholeTensors(std::move(small), k / 2, choice.round);
  // V_t ranks the accumulator outside W: W's entries count as zero there.
  std::vector<float> outside = accumulator;
  for (uint32_t i : support) outside[i] = 0;
  const uint64_t rest = k - support.size();
  const double share = std::clamp(
      std::max(explore_floor, 1.0 / static_cast<double>(std::max<int64_t>(choice.round, 1))),
      0.0, 1.0);
  const uint64_t drawn = static_cast<uint64_t>(std::llround(share * static_cast<double>(rest)));
  uint64_t voted = 0;
  if (vote && !vote->empty()) {
    std::vector<bool> taken(d, false);
    for (uint32_t i : support) taken[i] = true;
    for (uint32_t i : VotedCoordinates(*vote, accumulator, taken, rest - drawn, choice)) {
      support.push_back(i);
      outside[i] = 0;  // |A| ranks what the vote left
      ++voted;
    }
  }
  for (uint32_t i : TopByMagnitude(outside, rest - drawn - voted)) support.push_back(i);
  std::mt19937_64 rng = MakeRng(choice.seed, SeedPurpose::kSecureSupport,
                                {static_cast<uint64_t>(choice.round), choice.model});
  DrawRest(d, k - support.size(), rng, &support);
  std::sort(support.begin(), support.end());
  return support;
}

void AccumulateUpdate(const std::vector<float>& update, float decay,
                      std::vector<float>* accumulator) {
  if (accumulator->size() != update.size()) accumulator->assign(update.size(), 0.0f);
  for (size_t i = 0; i < update.size(); ++i)
    (*accumulator)[i] = decay * (*accumulator)[i] + update[i];
}

}  // namespace shefl
