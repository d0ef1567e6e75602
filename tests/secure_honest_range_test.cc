// The honest range of a secure sum (common/secure/honest_range.h): every
// word a client's encoding makes is within its bound, whatever its delta
// and residual (values far beyond the clip included), and the bound is
// reached; a sum of honest inputs is never flagged; one random word added
// to it almost always is, and a word one past the bound always is.
#include <cmath>
#include <random>
#include <vector>

#include "common/secure/honest_range.h"
#include "common/secure/secret.h"
#include "common/secure/secure_input.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr size_t kDim = 500;

SecureEncoding Encoding(double clip, int scale_bits) {
  SecureEncoding e;
  for (uint32_t i = 0; i < kDim; i += 2) e.support.push_back(i);
  e.clip = clip;
  e.scale_bits = scale_bits;
  e.seed = 3;
  e.round = 1;
  return e;
}

// One client's words at `weight`: deltas of magnitude up to `spread`.
std::vector<int64_t> ClientWords(const SecureEncoding& e, double weight,
                                 uint32_t client, double spread) {
  std::mt19937_64 rng(client);
  std::uniform_real_distribution<float> u(-spread, spread);
  std::vector<float> delta(kDim), residual;
  for (float& v : delta) v = u(rng);
  SecretWords q;
  REQUIRE(AddClientInput(delta, weight, client, e, &residual, &q).ok());
  std::vector<int64_t> out;
  for (uint32_t w : q) out.push_back(static_cast<int32_t>(w));
  return out;
}

TEST_CASE("every client word is within its bound, and the bound is reached") {
  for (int f : {8, 16, 24}) {
    for (double clip : {0.05, 0.3, 1.0}) {
      const SecureEncoding e = Encoding(clip, f);
      for (double w : {1.0, 0.7, 0.123456789, 1e-3}) {
        const uint64_t bound = ClientWordBound(w, clip, f);
        // Values ten times the clip: most coordinates sit at the clip.
        const auto words = ClientWords(e, w, 5, 10 * clip);
        int64_t largest = 0;
        for (int64_t v : words) largest = std::max<int64_t>(largest, std::llabs(v));
        INFO("f " << f << " clip " << clip << " w " << w);
        CHECK(static_cast<uint64_t>(largest) <= bound);
        CHECK(static_cast<uint64_t>(largest) + 1 >= bound);
      }
    }
  }
}

TEST_CASE("honest sums pass, and a random word or one past the bound does not") {
  const SecureEncoding e = Encoding(0.2, 24);
  const std::vector<double> weights = {1.0, 0.5, 0.25, 0.8, 0.33, 0.9};
  std::vector<uint32_t> sum(e.support.size(), 0);
  uint64_t bound = 0;
  for (size_t c = 0; c < weights.size(); ++c) {
    bound += ClientWordBound(weights[c], e.clip, e.scale_bits);
    const auto words = ClientWords(e, weights[c], static_cast<uint32_t>(c), 1.0);
    for (size_t j = 0; j < sum.size(); ++j) sum[j] += static_cast<uint32_t>(words[j]);
  }
  CHECK(FirstDishonestWord(sum, bound) == std::nullopt);

  // Words at exactly +-bound pass; one past it, either sign, does not.
  std::vector<uint32_t> edge(4, 0);
  edge[1] = static_cast<uint32_t>(bound);
  edge[2] = static_cast<uint32_t>(-static_cast<int64_t>(bound));
  CHECK(FirstDishonestWord(edge, bound) == std::nullopt);
  edge[3] = static_cast<uint32_t>(-static_cast<int64_t>(bound) - 1);
  CHECK(FirstDishonestWord(edge, bound) == std::optional<size_t>(3));
  edge[0] = static_cast<uint32_t>(bound + 1);
  CHECK(FirstDishonestWord(edge, bound) == std::optional<size_t>(0));

  // A party adding uniform random words: the range covers a fraction
  // 2 * bound / 2^32 of the words, so among 250 one lands outside.
  std::mt19937 rng(11);
  int flagged = 0;
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<uint32_t> lied = sum;
    for (uint32_t& w : lied) w += static_cast<uint32_t>(rng());
    flagged += FirstDishonestWord(lied, bound).has_value() ? 1 : 0;
  }
  CHECK(flagged == 100);
}

}  // namespace
}  // namespace shefl
