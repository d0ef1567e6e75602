// The support's wire form (common/sparse/index_set_codec.h): the sparse
// codec's index section alone. Round trips in every index format, costs
// exactly the codec's header and indices, and refuses what the codec
// refuses (a wrong d, more than max_k, truncation, a header of another
// value type).
#include "common/sparse/index_set_codec.h"

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/sparse/codec.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Each coordinate of d kept with probability k / d.
std::vector<uint32_t> RandomSet(uint64_t d, uint64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(static_cast<double>(k) / d);
  std::vector<uint32_t> out;
  for (uint64_t i = 0; i < d; ++i)
    if (keep(rng)) out.push_back(static_cast<uint32_t>(i));
  return out;
}

TEST_CASE("index sets round trip at the size of the codec's index section") {
  const uint64_t d = 582026;
  // Sparse to dense: varint gaps, Golomb-Rice or Elias-Fano, bitmap, dense.
  for (uint64_t k : {uint64_t{0}, uint64_t{1}, uint64_t{58}, uint64_t{5821},
                     uint64_t{58203}, uint64_t{300000}}) {
    INFO("k = " << k);
    const std::vector<uint32_t> set = RandomSet(d, k, k + 1);
    auto bytes = EncodeIndexSet(d, set);
    REQUIRE(bytes.ok());
    const EncodingPlan plan = PlanEncoding(d, set, ValueType::kFp16);
    CHECK(bytes->size() == plan.header_bytes + plan.index_bytes);
    auto back = DecodeIndexSet(*bytes, d, d);
    REQUIRE(back.ok());
    CHECK(*back == set);
  }
  std::vector<uint32_t> every(100);
  for (uint32_t i = 0; i < 100; ++i) every[i] = i;
  auto dense = EncodeIndexSet(100, every);
  REQUIRE(dense.ok());
  CHECK(*DecodeIndexSet(*dense, 100, 100) == every);
}

TEST_CASE("index sets refuse another d, too many, truncation and fp32 headers") {
  const std::vector<uint32_t> set = RandomSet(10000, 100, 3);
  auto bytes = EncodeIndexSet(10000, set);
  REQUIRE(bytes.ok());
  CHECK_FALSE(DecodeIndexSet(*bytes, 9999, 10000).ok());
  CHECK_FALSE(DecodeIndexSet(*bytes, 10000, set.size() - 1).ok());
  CHECK_FALSE(DecodeIndexSet(bytes->substr(0, bytes->size() - 1), 10000, 10000).ok());
  CHECK_FALSE(DecodeIndexSet(bytes->substr(0, 3), 10000, 10000).ok());
  CHECK_FALSE(DecodeIndexSet(*bytes + "x", 10000, 10000).ok());
  std::string fp32 = *bytes;
  fp32[1] = 0;
  CHECK_FALSE(DecodeIndexSet(fp32, 10000, 10000).ok());
  CHECK_FALSE(EncodeIndexSet(100, {5, 3}).ok());
}

}  // namespace
}  // namespace shefl
