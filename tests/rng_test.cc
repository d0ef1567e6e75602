#include "common/core/rng.h"

#include <numeric>
#include <vector>

#include <catch2/catch.hpp>

namespace shefl {

TEST_CASE("DeriveSeed separates purposes and tags") {
  CHECK(DeriveSeed(1, SeedPurpose::kCohort, {3}) ==
        DeriveSeed(1, SeedPurpose::kCohort, {3}));
  CHECK(DeriveSeed(1, SeedPurpose::kCohort, {3}) !=
        DeriveSeed(1, SeedPurpose::kPermutation, {3}));
  CHECK(DeriveSeed(1, SeedPurpose::kCohort, {3}) !=
        DeriveSeed(1, SeedPurpose::kCohort, {4}));
  CHECK(DeriveSeed(1, SeedPurpose::kCohort, {1, 2}) !=
        DeriveSeed(1, SeedPurpose::kCohort, {2, 1}));
}

TEST_CASE("Shuffle is a seeded permutation") {
  std::vector<int> a(100);
  std::iota(a.begin(), a.end(), 0);
  auto b = a;
  auto r1 = MakeRng(7, SeedPurpose::kPartition);
  auto r2 = MakeRng(7, SeedPurpose::kPartition);
  Shuffle(a, r1);
  Shuffle(b, r2);
  CHECK(a == b);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 100; ++i) CHECK(sorted[i] == i);
  CHECK(a != sorted);
}

TEST_CASE("UniformBelow stays in range") {
  auto rng = MakeRng(3, SeedPurpose::kCohort);
  std::vector<int> hits(7, 0);
  for (int i = 0; i < 7000; ++i) hits[UniformBelow(rng, 7)]++;
  for (int h : hits) CHECK(h > 800);
}

}  // namespace shefl
