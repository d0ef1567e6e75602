// Secure aggregation's common support (common/fed/common_support.h): its
// size and order, the top part from the public accumulator, the drawn part
// a function of (seed, round, model) alone and uniform over the rest.
#include "common/fed/common_support.h"

#include <algorithm>
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

}  // namespace
}  // namespace shefl
