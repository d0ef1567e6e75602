#include "common/core/backoff.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("the backoff base doubles to the cap and every delay is jittered around it") {
  Backoff b(0.25, 3.0, /*seed=*/11);
  const std::vector<double> bases = {0.25, 0.5, 1, 2, 3, 3, 3};
  std::vector<double> factors;
  for (double base : bases) {
    INFO("base " << base);
    CHECK(b.base() == base);
    const double d = b.NextDelay();
    CHECK(d >= 0.5 * base);
    CHECK(d < 1.5 * base);
    factors.push_back(d / base);
  }
  // Jitter: the factors are not all the same.
  CHECK(*std::max_element(factors.begin(), factors.end()) -
            *std::min_element(factors.begin(), factors.end()) > 0.05);
  b.Reset();
  CHECK(b.base() == 0.25);
  CHECK(b.NextDelay() < 1.5 * 0.25);
  CHECK(b.base() == 0.5);
}

TEST_CASE("the same seed gives the same delays, another seed others") {
  Backoff a(1, 60, 5), b(1, 60, 5), c(1, 60, 6);
  bool differs = false;
  for (int i = 0; i < 5; ++i) {
    const double x = a.NextDelay();
    CHECK(x == b.NextDelay());
    differs = differs || x != c.NextDelay();
  }
  CHECK(differs);
  Backoff capped(10, 1, 1);  // a cap below the start holds the start
  CHECK(capped.NextDelay() >= 5);
  CHECK(capped.base() == 10);
}

}  // namespace
}  // namespace shefl
