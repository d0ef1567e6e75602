// Secure aggregation's common support (common/fed/common_support.h): its
// size and order, the top part from the public accumulator, the drawn part
// a function of (seed, round, model) alone and uniform over the rest; the
// layout support's whole tensors (smallest first, within K/2), its top
// part outside them and its drawn share shrinking to the floor.
#include "common/fed/common_support.h"

#include <algorithm>
#include <cmath>
#include <set>

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

}  // namespace
}  // namespace shefl
