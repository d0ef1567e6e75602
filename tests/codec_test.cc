#include "common/sparse/codec.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "common/sparse/half.h"
#include "common/sparse/index_codes.h"
#include "common/sparse/varint.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

const ValueType kAllTypes[] = {ValueType::kFp32, ValueType::kFp16,
                               ValueType::kBf16};

// k = round(rho * d) distinct indices of [0, d), ascending, with N(0, 1)
// values (times `scale`).
SparseDelta RandomDelta(uint64_t d, double rho, uint64_t seed,
                        float scale = 1.0f) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> all(d);
  std::iota(all.begin(), all.end(), 0u);
  const size_t k = static_cast<size_t>(std::llround(rho * d));
  for (size_t i = 0; i < k; ++i) {
    std::uniform_int_distribution<size_t> pick(i, d - 1);
    std::swap(all[i], all[pick(rng)]);
  }
  SparseDelta s;
  s.dim = d;
  s.indices.assign(all.begin(), all.begin() + k);
  std::sort(s.indices.begin(), s.indices.end());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (size_t i = 0; i < k; ++i) s.values.push_back(scale * normal(rng));
  return s;
}

// What the receiver should see for value v sent as `type`.
float Rounded(float v, ValueType type) {
  uint16_t h = 0;
  switch (type) {
    case ValueType::kFp32: return v;
    case ValueType::kFp16: REQUIRE(FloatToHalf(v, &h)); return HalfToFloat(h);
    case ValueType::kBf16:
      REQUIRE(FloatToBfloat16(v, &h));
      return Bfloat16ToFloat(h);
  }
  return v;
}

std::string MustEncode(const SparseDelta& s, ValueType type) {
  auto enc = EncodeSparseDelta(s, type);
  REQUIRE(enc.ok());
  return *enc;
}

// Decoding `bytes` fails with a message containing `word`.
void ExpectDecodeError(const std::string& bytes, uint64_t d, uint64_t max_k,
                       const std::string& word) {
  auto dec = DecodeSparseDelta(bytes, d, max_k);
  INFO("expected an error containing \"" << word << "\"");
  REQUIRE_FALSE(dec.ok());
  INFO("got: " << dec.status().message());
  CHECK(dec.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(dec.status().message()).find(word) != std::string::npos);
}

void ExpectEncodeError(const SparseDelta& s, ValueType type,
                       const std::string& word) {
  auto enc = EncodeSparseDelta(s, type);
  INFO("expected an error containing \"" << word << "\"");
  REQUIRE_FALSE(enc.ok());
  INFO("got: " << enc.status().message());
  CHECK(std::string(enc.status().message()).find(word) != std::string::npos);
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

}  // namespace

TEST_CASE("fp16 conversion matches known bit patterns") {
  auto half = [](float f) {
    uint16_t h = 0xdead;
    REQUIRE(FloatToHalf(f, &h));
    return h;
  };
  CHECK(half(1.0f) == 0x3c00);
  CHECK(half(-2.5f) == 0xc100);
  CHECK(half(65504.0f) == 0x7bff);           // largest finite half
  CHECK(half(65519.0f) == 0x7bff);           // just below the overflow tie
  CHECK(half(std::ldexp(1.0f, -24)) == 0x0001);  // smallest subnormal
  CHECK(half(std::ldexp(1.0f, -14)) == 0x0400);  // smallest normal
  CHECK(half(0.1f) == 0x2e66);
  CHECK(half(-0.0f) == 0x8000);
  CHECK(half(1e-9f) == 0x0000);              // underflows to zero
  // Ties go to even: 2^-25 lies halfway between 0 and 2^-24.
  CHECK(half(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(half(3 * std::ldexp(1.0f, -25)) == 0x0002);
  CHECK(half(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(half(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  uint16_t h;
  CHECK_FALSE(FloatToHalf(65520.0f, &h));    // rounds to inf: refused
  CHECK_FALSE(FloatToHalf(1e10f, &h));
  CHECK_FALSE(FloatToHalf(std::numeric_limits<float>::infinity(), &h));
  CHECK_FALSE(FloatToHalf(std::nanf(""), &h));
  CHECK(HalfToFloat(0x0001) == std::ldexp(1.0f, -24));
  CHECK(HalfToFloat(0x7bff) == 65504.0f);
  CHECK(HalfToFloat(0xc100) == -2.5f);
}

TEST_CASE("bf16 conversion matches known bit patterns") {
  auto bf = [](float f) {
    uint16_t h = 0xdead;
    REQUIRE(FloatToBfloat16(f, &h));
    return h;
  };
  CHECK(bf(1.0f) == 0x3f80);
  CHECK(bf(-2.5f) == 0xc020);
  CHECK(bf(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);      // tie to even
  CHECK(bf(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);  // tie to even
  CHECK(bf(std::ldexp(1.0f, -133)) == 0x0001);           // smallest subnormal
  CHECK(bf(3.3895e38f) == 0x7f7f);                       // largest finite
  uint16_t h;
  CHECK_FALSE(FloatToBfloat16(FLT_MAX, &h));             // rounds to inf
  CHECK_FALSE(FloatToBfloat16(-std::numeric_limits<float>::infinity(), &h));
  CHECK(Bfloat16ToFloat(0xc020) == -2.5f);
}

TEST_CASE("half and bf16 agree with c10's round-to-nearest-even") {
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<uint32_t> bits;
  int checked_half = 0;
  for (int i = 0; i < 200000; ++i) {
    uint32_t u = bits(rng);
    // Bias half the draws into fp16's range, subnormals included.
    if (i % 2) u = (u & 0x807fffffu) | ((100u + u % 45u) << 23);
    const float f = BitsToFloat(u);
    if (!std::isfinite(f)) continue;
    uint16_t h;
    const uint16_t ref = c10::Half(f).x;
    if (FloatToHalf(f, &h)) {
      ++checked_half;
      CHECK(h == ref);
    } else {
      CHECK((ref & 0x7fff) == 0x7c00);  // c10 overflows to inf there
    }
    const uint16_t ref_bf = c10::BFloat16(f).x;
    if (FloatToBfloat16(f, &h)) {
      CHECK(h == ref_bf);
    } else {
      CHECK((ref_bf & 0x7fff) == 0x7f80);
    }
  }
  CHECK(checked_half > 50000);
  for (uint32_t h = 0; h < 0x10000; ++h) {  // widening is exact
    if ((h & 0x7c00) == 0x7c00) continue;
    CHECK(HalfToFloat(static_cast<uint16_t>(h)) ==
          static_cast<float>(c10::Half(static_cast<uint16_t>(h),
                                       c10::Half::from_bits())));
    uint16_t back;
    REQUIRE(FloatToHalf(HalfToFloat(static_cast<uint16_t>(h)), &back));
    CHECK(back == h);
  }
}

TEST_CASE("varints are canonical LEB128") {
  uint8_t buf[16];
  for (uint64_t v : {0ull, 1ull, 127ull, 128ull, 16383ull, 16384ull,
                     (1ull << 32) - 1, ~0ull}) {
    uint8_t* end = PutVarint(buf, v);
    CHECK(end - buf == VarintLength(v));
    if (v <= UINT32_MAX) {
      CHECK(VarintLength32(static_cast<uint32_t>(v)) == VarintLength(v));
    }
    const uint8_t* p = buf;
    uint64_t got = 0;
    CHECK(GetVarint(&p, end, 10, UINT64_MAX, &got) == VarintResult::kOk);
    CHECK(got == v);
    CHECK(p == end);
  }
  CHECK(VarintLength(300) == 2);
  PutVarint(buf, 300);
  CHECK(buf[0] == 0xac);
  CHECK(buf[1] == 0x02);
}

TEST_CASE("round trip at every density and value type, size predicted") {
  const uint64_t d = 100003;  // not a multiple of 8
  for (double rho : {0.001, 0.01, 0.1, 0.5, 1.0}) {
    for (ValueType type : kAllTypes) {
      INFO("rho=" << rho << " type=" << ValueTypeName(type));
      const SparseDelta s = RandomDelta(d, rho, 1000 * rho + 7);
      const std::string enc = MustEncode(s, type);
      CHECK(enc.size() == PredictEncodedSize(d, s.indices, type));
      CHECK(enc.size() <=
            PredictEncodedSizeUpperBound(d, s.indices.size(), type));
      auto dec = DecodeSparseDelta(enc, d, s.indices.size());
      REQUIRE(dec.ok());
      CHECK(dec->dim == d);
      CHECK(dec->indices == s.indices);
      REQUIRE(dec->values.size() == s.values.size());
      size_t mismatches = 0;
      for (size_t i = 0; i < s.values.size(); ++i) {
        const float v = s.values[i], got = dec->values[i];
        if (got != Rounded(v, type)) ++mismatches;
        // fp16 keeps 11 significant bits, bf16 8 (normal range).
        const float rel = type == ValueType::kFp32   ? 0.0f
                          : type == ValueType::kFp16 ? std::ldexp(1.0f, -11)
                                                     : std::ldexp(1.0f, -8);
        if (std::fabs(v) > 1e-4f && std::fabs(got - v) > rel * std::fabs(v)) {
          ++mismatches;
        }
      }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("index format follows density: Golomb-Rice when sparse and dense when full") {
  const uint64_t d = 80000;
  auto format = [&](double rho) {
    const SparseDelta s = RandomDelta(d, rho, 3);
    const std::string enc = MustEncode(s, ValueType::kFp32);
    const EncodingPlan plan = PlanEncoding(d, s.indices, ValueType::kFp32);
    CHECK(static_cast<uint8_t>(enc[2]) == static_cast<uint8_t>(plan.format));
    CHECK(plan.index_bytes <= (d + 7) / 8);
    CHECK(enc.size() == plan.total());
    return plan.format;
  };
  CHECK(format(0.001) == IndexFormat::kGolombRice);
  CHECK(format(0.01) == IndexFormat::kGolombRice);
  CHECK(format(0.1) == IndexFormat::kGolombRice);
  CHECK(format(0.2) == IndexFormat::kGolombRice);
  // Golomb-Rice with b = 0 is the bitmap cut after the last index: a tie
  // once the last index is in the last byte, and ties go to the bitmap.
  CHECK(format(0.5) == IndexFormat::kBitmap);
  CHECK(format(1.0) == IndexFormat::kDense);
  // Clustered indices: one byte a gap beats b + 1 bits a gap.
  std::vector<uint32_t> run(100);
  for (uint32_t i = 0; i < 100; ++i) run[i] = 5000 + i;
  CHECK(PlanEncoding(d, run, ValueType::kFp32).format ==
        IndexFormat::kVarintGaps);
  // Tie: 8 indices at 0..7 of d = 64 take 8 varint bytes or 8 bitmap
  // bytes; varint goes first (Golomb-Rice takes 3 here).
  SparseDelta tie{64, {0, 1, 2, 3, 4, 5, 6, 7}, std::vector<float>(8, 1.0f)};
  CHECK(PlanEncodingAs(64, tie.indices, ValueType::kFp32,
                       IndexFormat::kVarintGaps)->index_bytes == 8);
  CHECK(PlanEncodingAs(64, tie.indices, ValueType::kFp32, IndexFormat::kBitmap)
            ->index_bytes == 8);
  CHECK(PlanEncoding(64, tie.indices, ValueType::kFp32).format ==
        IndexFormat::kGolombRice);
  CHECK(PlanEncoding(64, {}, ValueType::kFp32).format ==
        IndexFormat::kVarintGaps);
}

TEST_CASE("byte layout of a small delta in varint gaps") {
  SparseDelta s{300, {2, 3, 200}, {1.0f, -2.5f, 0.5f}};
  std::string enc;
  REQUIRE(EncodeSparseDeltaAs(s, ValueType::kFp16, IndexFormat::kVarintGaps,
                              &enc).ok());
  const std::string want =
      Bytes({0xd1, 1, 0,          // magic/version, fp16, varint gaps
             0xac, 0x02, 3,       // d = 300, k = 3
             2, 0, 0xc4, 0x01,    // gaps: 2, 3-2-1, 200-3-1 = 196 (2 bytes)
             0x00, 0x3c, 0x00, 0xc1, 0x00, 0x38});  // 1.0, -2.5, 0.5
  CHECK(enc == want);
  CHECK(enc.size() == PlanEncodingAs(300, s.indices, ValueType::kFp16,
                                     IndexFormat::kVarintGaps)->total());
  auto dec = DecodeSparseDelta(enc, 300, 3);
  REQUIRE(dec.ok());
  CHECK(dec->indices == s.indices);
}

TEST_CASE("edge cases: empty, full, largest index") {
  for (ValueType type : kAllTypes) {
    SparseDelta empty{1000, {}, {}};
    std::string enc = MustEncode(empty, type);
    CHECK(enc.size() == 3 + 2 + 1);
    auto dec = DecodeSparseDelta(enc, 1000, 0);
    REQUIRE(dec.ok());
    CHECK(dec->nnz() == 0);

    SparseDelta none{0, {}, {}};
    enc = MustEncode(none, type);
    REQUIRE(DecodeSparseDelta(enc, 0, 0).ok());

    SparseDelta last{kCodecMaxDim, {UINT32_MAX}, {3.0f}};
    enc = MustEncode(last, type);
    CHECK(enc.size() == PredictEncodedSize(kCodecMaxDim, last.indices, type));
    dec = DecodeSparseDelta(enc, kCodecMaxDim, 1);
    REQUIRE(dec.ok());
    CHECK(dec->indices == last.indices);
    CHECK(dec->values[0] == 3.0f);
  }
  SparseDelta too_big{kCodecMaxDim + 1, {}, {}};
  ExpectEncodeError(too_big, ValueType::kFp32, "exceeds");
}

TEST_CASE("encoder rejects invalid input") {
  ExpectEncodeError({10, {1, 2}, {1.0f}}, ValueType::kFp32, "indices but");
  ExpectEncodeError({10, {1, 10}, {1.0f, 2.0f}}, ValueType::kFp32,
                    "out of range");
  ExpectEncodeError({10, {3, 2}, {1.0f, 2.0f}}, ValueType::kFp32, "ascending");
  ExpectEncodeError({10, {3, 3}, {1.0f, 2.0f}}, ValueType::kFp32, "duplicate");
  ExpectEncodeError({10, {1, 2}, {1.0f, std::nanf("")}}, ValueType::kFp32,
                    "position 1 (index 2) is NaN");
  ExpectEncodeError({10, {1}, {-std::numeric_limits<float>::infinity()}},
                    ValueType::kBf16, "Inf");
  ExpectEncodeError({10, {1}, {70000.0f}}, ValueType::kFp16, "overflows fp16");
  ExpectEncodeError({10, {1}, {FLT_MAX}}, ValueType::kBf16, "overflows bf16");
  std::string out = "stale";
  CHECK_FALSE(EncodeSparseDeltaTo({10, {1}, {70000.0f}}, ValueType::kFp16,
                                  &out).ok());
  CHECK(out.empty());
}

TEST_CASE("decoder names what is wrong") {
  const SparseDelta s{300, {2, 3, 200}, {1.0f, -2.5f, 0.5f}};
  const std::string good = MustEncode(s, ValueType::kFp32);
  REQUIRE(DecodeSparseDelta(good, 300, 3).ok());
  auto with = [&](size_t pos, int byte) {
    std::string b = good;
    b[pos] = static_cast<char>(byte);
    return b;
  };
  ExpectDecodeError(good.substr(0, 2), 300, 3, "truncated header");
  ExpectDecodeError(with(0, 0x51), 300, 3, "bad magic");
  ExpectDecodeError(with(0, 0xd2), 300, 3, "unsupported version 2");
  ExpectDecodeError(with(1, 7), 300, 3, "unknown value type 7");
  ExpectDecodeError(with(2, 5), 300, 3, "unknown index format 5");
  ExpectDecodeError(good, 301, 3, "dimension mismatch");
  ExpectDecodeError(good, 300, 2, "above max_k");
  ExpectDecodeError(good.substr(0, 4), 300, 3, "truncated header (d)");
  ExpectDecodeError(good.substr(0, 5), 300, 3, "truncated header (k)");
  ExpectDecodeError(good.substr(0, 7), 300, 3, "truncated index section");
  ExpectDecodeError(good.substr(0, good.size() - 1), 300, 3,
                    "truncated value section");
  ExpectDecodeError(good + "x", 300, 3, "1 trailing bytes");
  // d = 2^70: an 11-byte varint.
  ExpectDecodeError(Bytes({0xd1, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                           0xff, 0xff, 0xff, 0xff, 0x01}),
                    300, 3, "varint overflow in header (d)");
  ExpectDecodeError(Bytes({0xd1, 0, 0, 0x8a, 0x00, 0}), 10, 3,
                    "non-canonical");
  // k > d.
  ExpectDecodeError(Bytes({0xd1, 0, 0, 10, 11}), 10, 20, "exceeds d");
  // Gap beyond d, and a gap varint above 2^32.
  ExpectDecodeError(Bytes({0xd1, 0, 0, 10, 1, 10, 0, 0, 0x80, 0x3f}), 10, 1,
                    "index 10 at position 0 out of range");
  ExpectDecodeError(Bytes({0xd1, 0, 0, 10, 1, 0xff, 0xff, 0xff, 0xff, 0x7f}),
                    10, 1, "varint overflow in index section");
  // Second index lands at 10 of d = 10.
  ExpectDecodeError(Bytes({0xd1, 0, 0, 10, 2, 4, 5, 0, 0, 0x80, 0x3f, 0, 0,
                           0x80, 0x3f}),
                    10, 2, "index 10 at position 1 out of range");
  // Bitmap of d = 10 (2 bytes): a padding bit set, and a count mismatch.
  ExpectDecodeError(Bytes({0xd1, 2, 1, 10, 1, 0x00, 0x04, 0x80, 0x3f}), 10, 1,
                    "bitmap index 10 out of range");
  ExpectDecodeError(Bytes({0xd1, 2, 1, 10, 1, 0x03, 0x00, 0x80, 0x3f}), 10, 2,
                    "count mismatch");
  ExpectDecodeError(Bytes({0xd1, 2, 1, 10, 1, 0x01}), 10, 1,
                    "truncated index section");
  // Non-finite values, naming position and index.
  SparseDelta two{10, {4, 7}, {1.0f, 2.0f}};
  std::string nan = MustEncode(two, ValueType::kFp32);
  const uint32_t qnan = 0x7fc00000;
  std::memcpy(&nan[nan.size() - 4], &qnan, 4);
  ExpectDecodeError(nan, 10, 2, "NaN value at position 1 (index 7)");
  std::string inf = MustEncode(two, ValueType::kFp16);
  inf[inf.size() - 4] = 0x00;
  inf[inf.size() - 3] = static_cast<char>(0xfc);  // -inf
  ExpectDecodeError(inf, 10, 2, "Inf value at position 0 (index 4)");
  std::string bf = MustEncode(two, ValueType::kBf16);
  bf[bf.size() - 2] = static_cast<char>(0xc1);
  bf[bf.size() - 1] = static_cast<char>(0x7f);
  ExpectDecodeError(bf, 10, 2, "NaN value at position 1");
}

TEST_CASE("decoder survives every truncation and single-byte corruption") {
  const SparseDelta s = RandomDelta(5000, 0.05, 9);
  for (ValueType type : kAllTypes) {
    const std::string good = MustEncode(s, type);
    for (size_t n = 0; n < good.size(); ++n) {
      CHECK_FALSE(DecodeSparseDelta(good.substr(0, n), 5000, 5000).ok());
    }
    std::mt19937_64 rng(5);
    for (int i = 0; i < 2000; ++i) {
      std::string bad = good;
      bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
      auto dec = DecodeSparseDelta(bad, 5000, 5000);
      if (dec.ok()) {  // whatever decodes is a valid delta
        CHECK(EncodeSparseDelta(*dec, type).ok());
      }
    }
  }
}

namespace {

std::vector<uint32_t> FromGaps(const std::vector<uint64_t>& gaps) {
  std::vector<uint32_t> idx;
  uint64_t next = 0;
  for (uint64_t g : gaps) {
    idx.push_back(static_cast<uint32_t>(next + g));
    next = idx.back() + 1;
  }
  return idx;
}

// The largest encoding among sets built to be long in every form at once:
// one gap of d - k (Golomb-Rice's worst case), or gaps that are multiples
// of 2^b (Golomb-Rice's worst case again) and reach the varint thresholds.
uint64_t LargestAdversarial(uint64_t d, uint64_t k) {
  const unsigned b = IndexCodeParameter(d, k);
  uint64_t best = 0;
  auto consider = [&](std::vector<uint64_t> gaps) {
    best = std::max(best, PredictEncodedSize(d, FromGaps(gaps),
                                             ValueType::kFp32));
  };
  std::vector<uint64_t> gaps(k, 0);
  gaps[k - 1] = d - k;
  consider(gaps);
  for (uint64_t m = 1; m <= (1u << 14); m *= 2) {
    const uint64_t step = m << b;
    if ((k - 1) * step > d - k) break;
    std::vector<uint64_t> g(k, step);
    g[k - 1] = d - k - (k - 1) * step;
    consider(g);
  }
  for (uint64_t threshold : {128ull, 16384ull}) {
    const uint64_t step = ((threshold + (1ull << b) - 1) >> b) << b;
    for (uint64_t n : {k / 2, k - 1, k}) {
      if (n * step > d - k) continue;
      std::vector<uint64_t> g(k, 0);
      for (uint64_t i = 0; i < n; ++i) g[i] = step;
      g[k - 1] += d - k - n * step;
      consider(g);
    }
  }
  return best;
}

}  // namespace

TEST_CASE("worst-case size bound is tight and exceeded by no index set") {
  // Exhaustive over how many gaps reach 2 and 3 bytes (exact while
  // d < 2^21): the most bytes k gaps summing to <= d - k can take.
  auto brute = [](uint64_t d, uint64_t k) {
    uint64_t best = 0;
    for (uint64_t c3 = 0; c3 <= k && c3 * 16384 <= d - k; ++c3) {
      // Given c3 three-byte gaps, as many two-byte ones as the rest allows.
      const uint64_t c2 = std::min(k - c3, (d - k - c3 * 16384) / 128);
      best = std::max(best, k + c2 + 2 * c3);
    }
    return k == 0 ? 0 : best;
  };
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 600; ++trial) {
    const uint64_t d = 1 + rng() % 200000;
    const uint64_t k = trial % 3 == 0 ? rng() % (d + 1) : rng() % 60;
    if (k >= d) continue;  // k = d: the dense form, below
    const uint64_t header = 3 + VarintLength(d) + VarintLength(k);
    // Each form's worst case; bitmap and Elias-Fano have a fixed size.
    const uint64_t elias_fano = (EliasFanoBits(d, k) + 7) / 8;
    const uint64_t want =
        header + std::min({brute(d, k), (d + 7) / 8, elias_fano}) + 4 * k;
    INFO("d=" << d << " k=" << k);
    const uint64_t bound = PredictEncodedSizeUpperBound(d, k, ValueType::kFp32);
    CHECK(bound == want);
    // Tight: some set reaches it.
    if (k > 0) CHECK(LargestAdversarial(d, k) == bound);
  }
  // Random sets never exceed it.
  for (double rho : {0.0001, 0.001, 0.05, 0.3}) {
    const SparseDelta s = RandomDelta(200000, rho, 77);
    CHECK(PredictEncodedSize(200000, s.indices, ValueType::kBf16) <=
          PredictEncodedSizeUpperBound(200000, s.nnz(), ValueType::kBf16));
  }
  // k = d: the dense delta has no index section, but the bound still
  // covers every smaller set (it is nondecreasing in k).
  for (uint64_t d : {1ull, 5ull, 100ull, 100003ull}) {
    const SparseDelta full = RandomDelta(d, 1.0, 1);
    const uint64_t bound = PredictEncodedSizeUpperBound(d, d, ValueType::kFp16);
    CHECK(MustEncode(full, ValueType::kFp16).size() <= bound);
    CHECK(PredictEncodedSizeUpperBound(d, d - 1, ValueType::kFp16) <= bound);
  }
}

TEST_CASE("LargestKForBudget: k fits, k + 1 does not") {
  for (ValueType type : kAllTypes) {
    for (uint64_t d : {1ull, 100ull, 582026ull, 11200000ull}) {
      for (uint64_t budget : {10ull, 100ull, 5000ull, 300000ull, 50000000ull}) {
        auto k = LargestKForBudget(d, budget, type);
        REQUIRE(k.ok());
        INFO("d=" << d << " budget=" << budget << " k=" << *k);
        CHECK(*k <= d);
        CHECK(PredictEncodedSizeUpperBound(d, *k, type) <= budget);
        if (*k < d) {
          CHECK(PredictEncodedSizeUpperBound(d, *k + 1, type) > budget);
        }
      }
    }
  }
  // A random set of that k really fits.
  auto k = LargestKForBudget(100000, 30000, ValueType::kFp16);
  REQUIRE(k.ok());
  const SparseDelta s = RandomDelta(100000, double(*k) / 100000, 4);
  REQUIRE(s.nnz() == *k);
  CHECK(MustEncode(s, ValueType::kFp16).size() <= 30000);
  auto none = LargestKForBudget(1000, 5, ValueType::kFp32);
  REQUIRE_FALSE(none.ok());
  CHECK(std::string(none.status().message()).find("empty") !=
        std::string::npos);
}

TEST_CASE("entropy floor, and the encoding stays near it") {
  CHECK(EntropyFloorBits(10, 3) == Approx(std::log2(120.0)));
  CHECK(EntropyFloorBits(52, 5) == Approx(std::log2(2598960.0)));
  CHECK(EntropyFloorBits(1000, 0) == 0.0);
  CHECK(EntropyFloorBits(1000, 1000) == 0.0);
  // docs/DESIGN.md, "Wire format and byte accounting": within 10% of floor +
  // value bits at rho 0.1, 0.02 (index bits alone within 5%:
  // index_codes_test).
  for (double rho : {0.1, 0.02}) {
    const uint64_t d = 582026;
    const SparseDelta s = RandomDelta(d, rho, 1);
    const double bits = 8.0 * MustEncode(s, ValueType::kFp32).size();
    const double floor = EntropyFloorBits(d, s.nnz()) + 32.0 * s.nnz();
    INFO("rho=" << rho << " bits/floor=" << bits / floor);
    CHECK(bits <= 1.10 * floor);
  }
}

TEST_CASE("value type names") {
  for (ValueType type : kAllTypes) {
    auto parsed = ParseValueType(ValueTypeName(type));
    REQUIRE(parsed.ok());
    CHECK(*parsed == type);
  }
  CHECK(ValueTypeBytes(ValueType::kFp32) == 4);
  CHECK(ValueTypeBytes(ValueType::kBf16) == 2);
  auto bad = ParseValueType("fp8");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("fp8") != std::string::npos);
}

}  // namespace shefl
