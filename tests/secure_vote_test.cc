// The vote of secure aggregation, a party's side (common/secure/
// vote_counts.h and the vote words of common/secure/secure_input.h): a
// client's own top-k is its k largest magnitudes, ties to the lower
// coordinate, NaN last; its positions are counted once in their row and
// once in their column of the grid that holds them; the counts ride after
// the K values of the input, and summed under masks they are exactly the
// clients' counts added up, while the values are what they were without a
// vote.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "common/secure/honest_range.h"
#include "common/secure/secure_input.h"
#include "common/secure/vote_counts.h"
#include "tests/masked_session_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// The rule written the slow way: sort every coordinate by (|x| desc, NaN
// last, coordinate asc) and keep the first k.
std::vector<uint64_t> SlowTopK(const std::vector<float>& x, uint64_t k) {
  std::vector<uint64_t> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  const auto mag = [&](uint64_t i) {
    return std::isnan(x[i]) ? -1.0f : std::fabs(x[i]);
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](uint64_t a, uint64_t b) { return mag(a) > mag(b); });
  order.resize(std::min<uint64_t>(k, x.size()));
  std::sort(order.begin(), order.end());
  return order;
}

TEST_CASE("vote: a client's own top-k is its largest magnitudes, ties low, NaN last") {
  const std::vector<float> x = {0.5f, -2.0f, 1.0f, -1.0f, NAN, 1.0f, 0.0f, -3.0f};
  CHECK(OwnTopK(x, 0).empty());
  CHECK(OwnTopK(x, 1) == std::vector<uint64_t>{7});
  CHECK(OwnTopK(x, 2) == std::vector<uint64_t>{1, 7});
  // Three entries tie at 1.0 for the last two places: 2 and 3 win.
  CHECK(OwnTopK(x, 4) == std::vector<uint64_t>{1, 2, 3, 7});
  CHECK(OwnTopK(x, 7) == std::vector<uint64_t>{0, 1, 2, 3, 5, 6, 7});
  CHECK(OwnTopK(x, 8).size() == 8);
  CHECK(OwnTopK(x, 100).size() == 8);
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> level(-20, 20);  // many ties
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<float> y(500);
    for (float& v : y) v = static_cast<float>(level(rng)) / 8;
    for (uint64_t k : {1u, 17u, 250u, 499u}) CHECK(OwnTopK(y, k) == SlowTopK(y, k));
  }
}

TEST_CASE("vote: each position counts once in its row and once in its column") {
  // Two grids: 3 x 4 at 10 and 2 x 5 at 30; d = 40.
  const std::vector<TensorGrid> grids = {{10, 3, 4}, {30, 2, 5}};
  REQUIRE(MarginalWords(grids) == 14);
  SecretWords w(2 + 14);
  // 10 = (0,0); 15 = (1,1); 21 = (2,3); 36 = (1,1) of the second grid;
  // 5 and 22..29 are in no grid.
  const std::vector<uint64_t> positions = {5, 10, 15, 21, 25, 36};
  AddVoteCounts(positions, grids, 2, &w);
  const std::vector<uint32_t> want = {0, 0,           // before the base
                                      1, 1, 1,        // grid 1 rows
                                      1, 1, 0, 1,     // grid 1 columns
                                      0, 1,           // grid 2 rows
                                      0, 1, 0, 0, 0}; // grid 2 columns
  CHECK(std::vector<uint32_t>(w.begin(), w.end()) == want);
}

constexpr size_t kDim = 3000;

SecureEncoding VoteEncoding() {
  SecureEncoding e;
  for (uint32_t i = 1; i < kDim; i += 11) e.support.push_back(i);
  e.clip = 0.05;
  e.seed = 4;
  e.round = 2;
  e.model = 1;
  e.vote = {{0, 20, 50}, {1000, 40, 25}};  // 1,000 entries each
  return e;
}

std::vector<float> Delta(uint32_t client) {
  std::mt19937_64 rng(client);
  std::normal_distribution<float> normal(0.0f, 0.03f);
  std::vector<float> d(kDim);
  for (float& v : d) v = normal(rng);
  return d;
}

TEST_CASE("vote: the counts ride after the values, and the values are unchanged") {
  SecureEncoding plain = VoteEncoding();
  plain.vote.clear();
  const SecureEncoding e = VoteEncoding();
  REQUIRE(e.words() == e.support.size() + 70 + 65);
  SecretWords q, q_plain;
  std::vector<float> r, r_plain;
  REQUIRE(AddClientInput(Delta(7), 0.5, 7, e, &r, &q, 60).ok());
  REQUIRE(AddClientInput(Delta(7), 0.5, 7, plain, &r_plain, &q_plain, 60).ok());
  REQUIRE(q.size() == e.words());
  CHECK(std::equal(q_plain.begin(), q_plain.end(), q.begin()));
  CHECK(r == r_plain);  // the vote takes nothing from the residual
  SecretWords want(e.words() - e.support.size());
  AddVoteCounts(SlowTopK(Delta(7), 60), e.vote, 0, &want);
  CHECK(std::equal(want.begin(), want.end(), q.begin() + e.support.size()));
  SecretWords bad(e.words() - 1);
  CHECK(!AddClientInput(Delta(7), 0.5, 7, e, &r, &bad, 60).ok());
  SecureEncoding beyond = e;
  beyond.vote.push_back({2900, 10, 20});
  SecretWords fresh;
  const absl::Status st = AddClientInput(Delta(7), 0.5, 7, beyond, &r, &fresh, 60);
  CHECK(st.message().find("vote grid of 10 x 20 at 2900") != std::string::npos);
}

TEST_CASE("vote: summed under masks, the counts are the clients' counts added up") {
  const SecureEncoding e = VoteEncoding();
  const std::vector<std::vector<uint32_t>> packing = {{0, 1}, {2}, {3, 4, 5}};
  testing::MaskedSession session(e, static_cast<uint32_t>(packing.size()));
  SecretWords want(e.words() - e.support.size());
  uint64_t total_k = 0;
  for (uint32_t p = 0; p < packing.size(); ++p) {
    SecretWords q;
    for (uint32_t c : packing[p]) {
      std::vector<float> r;
      const uint64_t k = 40 + 30 * c;
      REQUIRE(AddClientInput(Delta(c), 0.5, c, e, &r, &q, k).ok());
      AddVoteCounts(SlowTopK(Delta(c), k), e.vote, 0, &want);
      total_k += k;
    }
    session.Add(session.Mask(p, q, 0.5 * packing[p].size()));
  }
  const SecureSum sum = session.Finish();
  const absl::Span<const uint32_t> counts =
      absl::Span<const uint32_t>(sum.sum).subspan(e.support.size());
  CHECK(std::equal(want.begin(), want.end(), counts.begin(), counts.end()));
  CHECK(std::accumulate(counts.begin(), counts.end(), uint64_t{0}) > 0);
  // Honest counts are within the clients' k; one more past it is not.
  CHECK(!FirstDishonestCount(counts, total_k));
  std::vector<uint32_t> lied(counts.begin(), counts.end());
  lied[5] = static_cast<uint32_t>(total_k + 1);
  CHECK(FirstDishonestCount(lied, total_k) == std::optional<size_t>(5));
  lied[5] = 0xffffffffu;  // "minus one" is no count either
  CHECK(FirstDishonestCount(lied, total_k) == std::optional<size_t>(5));
}

}  // namespace
}  // namespace shefl
