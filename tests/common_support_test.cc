// Secure aggregation's common support (common/fed/common_support.h): its
// size and order, the top part from the public accumulator, the drawn part
// a function of (seed, round, model) alone and uniform over the rest; the
// layout support's whole tensors (smallest first, within K/2), its top
// part outside them and its drawn share shrinking to the floor; the vote:
// each grid's share of the budget by its votes, within it the highest
// row x column counts (ties by |A|, then the hash), never a coordinate W
// or a zero count holds, and the layout support's V from it.
#include "common/fed/common_support.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "common/fed/vote_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

bool SortedDistinct(const std::vector<uint32_t>& v) {
  return std::adjacent_find(v.begin(), v.end(),
                            [](uint32_t a, uint32_t b) { return a >= b; }) == v.end();
}

TEST_CASE("the support has K sorted distinct coordinates, all of d when K >= d") {
  std::vector<float> acc(1000, 0.0f);
  for (uint64_t k : {0u, 1u, 10u, 250u, 999u}) {
    const auto s = CommonSupport(acc, {k, 0.25, 7, 3, 1});
    CHECK(s.size() == k);
    CHECK(SortedDistinct(s));
    if (!s.empty()) CHECK(s.back() < 1000u);
  }
  const auto all = CommonSupport(acc, {5000, 0.25, 7, 3, 1});
  REQUIRE(all.size() == 1000u);
  CHECK(all.front() == 0u);
  CHECK(all.back() == 999u);
}

TEST_CASE("the top part is the accumulator's largest magnitudes, ties to the lower coordinate") {
  std::vector<float> acc(100, 0.0f);
  acc[90] = -5;  // magnitude counts, not sign
  acc[10] = 4;
  acc[40] = 3;
  acc[20] = 3;   // ties with 40: 20 wins
  acc[70] = 1;
  // K = 8, 2 drawn (0.25): the top 6 are the 5 non-zero entries and one
  // more drawn, since only 5 are non-zero.
  const auto s = CommonSupport(acc, {8, 0.25, 1, 2, 0});
  const std::set<uint32_t> got(s.begin(), s.end());
  for (uint32_t i : {90u, 10u, 40u, 20u, 70u}) CHECK(got.count(i) == 1);
  CHECK(s.size() == 8u);
  // K = 4 with nothing drawn: exactly the top 4, 40 beaten by 20.
  const auto top = CommonSupport(acc, {4, 0.0, 1, 2, 0});
  CHECK(top == std::vector<uint32_t>{10, 20, 40, 90});
  acc[20] = 0;
  CHECK(CommonSupport(acc, {4, 0.0, 1, 2, 0}) == std::vector<uint32_t>{10, 40, 70, 90});
}

TEST_CASE("the drawn part depends on the seed, round and model alone") {
  const std::vector<float> zeros(5000, 0.0f);
  const auto a = CommonSupport(zeros, {50, 0.25, 11, 4, 2});
  CHECK(a == CommonSupport(zeros, {50, 0.25, 11, 4, 2}));
  CHECK(a != CommonSupport(zeros, {50, 0.25, 11, 5, 2}));
  CHECK(a != CommonSupport(zeros, {50, 0.25, 11, 4, 3}));
  CHECK(a != CommonSupport(zeros, {50, 0.25, 12, 4, 2}));
}

TEST_CASE("the drawn coordinates are uniform over those the top part left") {
  // d = 200, the top 30 fixed by the accumulator, 10 drawn from the other
  // 170 in each of 3,400 rounds: each is drawn 200 times on average.
  std::vector<float> acc(200, 0.0f);
  for (int i = 0; i < 30; ++i) acc[i * 5] = 1.0f + static_cast<float>(i);
  std::vector<int> count(200, 0);
  const int rounds = 3400;
  for (int r = 0; r < rounds; ++r)
    for (uint32_t c : CommonSupport(acc, {40, 0.25, 3, r, 0})) ++count[c];
  double chi2 = 0;
  int free = 0;
  for (int i = 0; i < 200; ++i) {
    if (i % 5 == 0 && i < 150) {
      CHECK(count[i] == rounds);  // the top part, every round
      continue;
    }
    ++free;
    const double expected = rounds * 10.0 / 170.0;
    chi2 += (count[i] - expected) * (count[i] - expected) / expected;
  }
  CHECK(free == 170);
  // 169 degrees of freedom: the 0.999 quantile is about 235.
  CHECK(chi2 < 235);
}

TEST_CASE("the accumulator decays and adds each published update") {
  std::vector<float> acc;
  AccumulateUpdate({1, -2, 0}, 0.5f, &acc);
  CHECK(acc == std::vector<float>{1, -2, 0});
  AccumulateUpdate({1, 2, 4}, 0.5f, &acc);
  CHECK(acc == std::vector<float>{1.5f, 1, 4});
}

// A model of d = 1000: a 600-entry weight, a 10-entry bias, a 300-entry
// weight, an 80-entry bias, a 10-entry last bias.
const std::vector<TensorSpan> kSmall = {{600, 10}, {910, 80}, {990, 10}};

TEST_CASE("layout: small tensors whole, smallest first, within K/2, the next in turns") {
  std::vector<float> acc(1000, 0.0f);
  // K = 200: W gets both 10-entry tensors and the 80 (100 = K/2).
  auto s = LayoutSupport(acc, kSmall, 0.1, {200, 0, 7, 5, 0});
  REQUIRE(s.size() == 200);
  CHECK(SortedDistinct(s));
  const std::set<uint32_t> in(s.begin(), s.end());
  for (uint32_t i = 600; i < 610; ++i) CHECK(in.count(i));
  for (uint32_t i = 910; i < 1000; ++i) CHECK(in.count(i));
  // K = 100: K/2 = 50 holds the two 10-entry tensors and a window of 30
  // of the 80, which moves on by 30 a round (mod 80), so every entry of
  // it is in W once every three rounds.
  std::vector<int> seen(80, 0);
  for (int64_t round = 1; round <= 8; ++round) {
    s = LayoutSupport(acc, kSmall, 0.1, {100, 0, 7, round, 0});
    const std::set<uint32_t> in2(s.begin(), s.end());
    for (uint32_t i : {600u, 609u, 990u, 999u}) CHECK(in2.count(i));
    const uint32_t start = static_cast<uint32_t>(((round - 1) * 30) % 80);
    for (uint32_t j = 0; j < 30; ++j) CHECK(in2.count(910 + (start + j) % 80));
    for (uint32_t j = 0; j < 80; ++j) seen[j] += in2.count(910 + j) ? 1 : 0;
  }
  for (int n : seen) CHECK(n >= 2);
}

TEST_CASE("layout: the top of |A| outside W, and a drawn share of max(floor, 1/t)") {
  std::vector<float> acc(1000, 0.0f);
  for (uint32_t i = 0; i < 500; ++i) acc[i] = static_cast<float>(1000 - i);
  acc[605] = 1e6f;  // inside W: not counted twice
  const uint64_t k = 120;  // W: the two 10s and 40 of the 80 (K/2 = 60)
  for (int64_t round : {1, 2, 4, 20}) {
    const auto s = LayoutSupport(acc, kSmall, 0.1, {k, 0, 7, round, 0});
    REQUIRE(s.size() == k);
    const double share = std::max(0.1, 1.0 / static_cast<double>(round));
    const uint64_t drawn = static_cast<uint64_t>(std::llround(share * 60));
    // The top part is coordinates 0..(60 - drawn - 1), the largest |A|.
    const std::set<uint32_t> in(s.begin(), s.end());
    for (uint32_t i = 0; i < 60 - drawn; ++i) CHECK(in.count(i));
    int top = 0;
    for (uint32_t i = 0; i < 500; ++i) top += in.count(i) ? 1 : 0;
    CHECK(top >= static_cast<int>(60 - drawn));
  }
  // A function of its inputs: the same call, the same support; another
  // round, another drawn part.
  CHECK(LayoutSupport(acc, kSmall, 0.1, {k, 0, 7, 20, 0}) ==
        LayoutSupport(acc, kSmall, 0.1, {k, 0, 7, 20, 0}));
  CHECK(LayoutSupport(acc, kSmall, 0.1, {k, 0, 7, 20, 0}) !=
        LayoutSupport(acc, kSmall, 0.1, {k, 0, 7, 21, 0}));
}

// Two grids: 4 x 5 at 0 and 2 x 10 at 100 (d = 200).
SupportVote TwoGrids() {
  SupportVote v;
  v.grids = {{0, 4, 5}, {100, 2, 10}};
  v.counts = {3, 0, 1, 0,  2, 0, 1, 0, 1,        // grid 1: rows, columns
              1, 1,  1, 0, 0, 0, 0, 0, 0, 0, 0, 1};  // grid 2
  return v;
}

TEST_CASE("vote: grids share the budget by their votes, and cells score row x column") {
  const SupportVote v = TwoGrids();
  std::vector<float> acc(200, 0.0f);
  std::vector<bool> taken(200, false);
  // Votes 4 and 2: a budget of 3 splits 2 and 1.
  auto got = VotedCoordinates(v, acc, taken, 3, {0, 0, 7, 2, 0});
  std::sort(got.begin(), got.end());
  // Grid 1's best: (0,0) scores 3*2 = 6, then (0,2) and (0,4) 3 each,
  // ties broken by the hash; grid 2: (0,0), (0,9), (1,0), (1,9) all 1.
  REQUIRE(got.size() == 3);
  CHECK(got[0] == 0);
  CHECK((got[1] == 2 || got[1] == 4));
  CHECK(std::set<uint32_t>{100, 109, 110, 119}.count(got[2]));
  // |A| breaks ties before the hash.
  acc[4] = 0.5f;
  acc[119] = -0.1f;
  got = VotedCoordinates(v, acc, taken, 3, {0, 0, 7, 2, 0});
  CHECK(std::set<uint32_t>(got.begin(), got.end()) == std::set<uint32_t>{0, 4, 119});
  // Taken coordinates and zero scores are never chosen, however large the
  // budget: grid 1 has 6 scored cells (rows 0, 2 x columns 0, 2, 4).
  taken[0] = true;
  got = VotedCoordinates(v, acc, taken, 1000, {0, 0, 7, 2, 0});
  CHECK(got.size() == 5 + 4);
  CHECK(std::count(got.begin(), got.end(), 0u) == 0);
  // No votes, or counts that do not fit the grids: nothing.
  SupportVote none = v;
  std::fill(none.counts.begin(), none.counts.end(), 0u);
  CHECK(VotedCoordinates(none, acc, taken, 10, {0, 0, 7, 2, 0}).empty());
  none.counts.pop_back();
  CHECK(VotedCoordinates(none, acc, taken, 10, {0, 0, 7, 2, 0}).empty());
  // The hash depends on the round: among many ties, another round picks
  // other coordinates.
  SupportVote flat;
  flat.grids = {{0, 20, 20}};
  flat.counts.assign(40, 1);
  const std::vector<float> zeros(400, 0.0f);
  const std::vector<bool> free(400, false);
  CHECK(VotedCoordinates(flat, zeros, free, 10, {0, 0, 7, 2, 0}) ==
        VotedCoordinates(flat, zeros, free, 10, {0, 0, 7, 2, 0}));
  CHECK(VotedCoordinates(flat, zeros, free, 10, {0, 0, 7, 2, 0}) !=
        VotedCoordinates(flat, zeros, free, 10, {0, 0, 7, 3, 0}));
}

TEST_CASE("layout with a vote: W whole, then the voted cells, then |A|, then drawn") {
  std::vector<float> acc(1000, 0.0f);
  for (uint32_t i = 0; i < 100; ++i) acc[i] = static_cast<float>(1000 - i);
  SupportVote v;
  v.grids = {{200, 10, 40}};  // 400 entries at 200
  v.counts.assign(50, 0);
  v.counts[3] = 5;        // row 3
  v.counts[10 + 7] = 4;   // column 7
  v.counts[10 + 8] = 2;   // column 8
  // K = 120, round 20: W 60 (the two 10s and 40 of the 80), 6 drawn,
  // 54 for V: 2 voted cells, then 52 of the top of |A|.
  const auto s = LayoutSupport(acc, kSmall, 0.1, {120, 0, 7, 20, 0}, &v);
  REQUIRE(s.size() == 120);
  CHECK(SortedDistinct(s));
  const std::set<uint32_t> in(s.begin(), s.end());
  CHECK(in.count(200 + 3 * 40 + 7));
  CHECK(in.count(200 + 3 * 40 + 8));
  for (uint32_t i = 0; i < 52; ++i) CHECK(in.count(i));
  for (uint32_t i = 600; i < 610; ++i) CHECK(in.count(i));
  // Without the vote the two cells are not chosen (|A| is 0 there).
  const auto plain = LayoutSupport(acc, kSmall, 0.1, {120, 0, 7, 20, 0});
  CHECK(plain != s);
  const SupportVote empty;
  CHECK(LayoutSupport(acc, kSmall, 0.1, {120, 0, 7, 20, 0}, &empty) == plain);
}

}  // namespace
}  // namespace shefl
