#include "common/fed/vote_support.h"

#include <algorithm>
#include <cmath>

#include "common/core/rng.h"

namespace shefl {
namespace {

struct Candidate {
  uint64_t score = 0;
  float magnitude = 0;  // |A|
  uint64_t tie = 0;     // the hash
  uint32_t coordinate = 0;
};

bool Before(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.magnitude != b.magnitude) return a.magnitude > b.magnitude;
  return a.tie != b.tie ? a.tie < b.tie : a.coordinate < b.coordinate;
}

// Each grid's share of `budget`: floor(budget * votes_g / votes), then
// one more to the largest remainders (ties to the earlier grid).
std::vector<uint64_t> SplitBudget(const std::vector<uint64_t>& votes,
                                  uint64_t budget) {
  uint64_t total = 0;
  for (uint64_t v : votes) total += v;
  std::vector<uint64_t> share(votes.size(), 0);
  if (total == 0) return share;
  std::vector<std::pair<long double, size_t>> remainders;
  uint64_t given = 0;
  for (size_t g = 0; g < votes.size(); ++g) {
    const long double exact = static_cast<long double>(budget) * votes[g] / total;
    share[g] = static_cast<uint64_t>(std::floor(exact));
    given += share[g];
    remainders.push_back({exact - share[g], g});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t j = 0; given < budget && j < remainders.size(); ++j, ++given)
    ++share[remainders[j].second];
  return share;
}

// The grid's coordinates with a score above 0 that are not taken.
std::vector<Candidate> Candidates(const TensorGrid& g, const uint32_t* rows,
                                  const uint32_t* cols,
                                  const std::vector<float>& accumulator,
                                  const std::vector<bool>& taken,
                                  uint64_t salt) {
  std::vector<Candidate> out;
  for (uint64_t o = 0; o < g.rows; ++o) {
    if (rows[o] == 0) continue;
    for (uint64_t i = 0; i < g.cols; ++i) {
      const uint64_t c = g.offset + o * g.cols + i;
      if (cols[i] == 0 || taken[c]) continue;
      const float a = accumulator[c];
      out.push_back({uint64_t{rows[o]} * cols[i],
                     std::isfinite(a) ? std::fabs(a) : 0.0f, Mix64(salt ^ c),
                     static_cast<uint32_t>(c)});
    }
  }
  return out;
}

}  // namespace

std::vector<uint32_t> VotedCoordinates(const SupportVote& vote,
                                       const std::vector<float>& accumulator,
                                       const std::vector<bool>& taken,
                                       uint64_t budget,
                                       const SupportChoice& choice) {
  std::vector<uint32_t> out;
  if (vote.counts.size() != MarginalWords(vote.grids)) return out;
  for (const TensorGrid& g : vote.grids)
    if (g.offset + g.numel() > accumulator.size()) return out;
  std::vector<uint64_t> votes;
  size_t at = 0;
  for (const TensorGrid& g : vote.grids) {
    uint64_t n = 0;  // each position counts once in its row
    for (uint64_t o = 0; o < g.rows; ++o) n += vote.counts[at + o];
    votes.push_back(n);
    at += g.rows + g.cols;
  }
  const std::vector<uint64_t> share = SplitBudget(votes, budget);
  const uint64_t salt = DeriveSeed(choice.seed, SeedPurpose::kSecureSupport,
                                   {static_cast<uint64_t>(choice.round),
                                    choice.model, 1});
  at = 0;
  for (size_t g = 0; g < vote.grids.size(); ++g) {
    const TensorGrid& grid = vote.grids[g];
    const uint32_t* rows = vote.counts.data() + at;
    at += grid.rows + grid.cols;
    if (share[g] == 0) continue;
    std::vector<Candidate> c = Candidates(grid, rows, rows + grid.rows,
                                          accumulator, taken, salt);
    const size_t n = std::min<size_t>(share[g], c.size());
    std::partial_sort(c.begin(), c.begin() + static_cast<int64_t>(n), c.end(),
                      Before);
    for (size_t j = 0; j < n; ++j) out.push_back(c[j].coordinate);
  }
  return out;
}

}  // namespace shefl
