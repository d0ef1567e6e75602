// The bit-level index codes (common/sparse/index_codes.h, common/sparse/bit_io.h) and
// the codec's formats built on them: Golomb-Rice, Elias-Fano and dense
// beside varint gaps and bitmap. Round trips over edge cases, exact size
// prediction, the choice of the smallest form, the budget bound, the
// distance to the entropy floor, and a decoder that refuses by name.
#include "common/sparse/index_codes.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/sparse/bit_io.h"
#include "common/sparse/codec.h"
#include "common/sparse/varint.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

const IndexFormat kAllFormats[] = {
    IndexFormat::kVarintGaps, IndexFormat::kBitmap, IndexFormat::kGolombRice,
    IndexFormat::kEliasFano, IndexFormat::kDense};

// Each index of [0, d) kept with probability p.
std::vector<uint32_t> Bernoulli(uint64_t d, double p, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(p);
  std::vector<uint32_t> idx;
  for (uint64_t i = 0; i < d; ++i)
    if (keep(rng)) idx.push_back(static_cast<uint32_t>(i));
  return idx;
}

// Exactly k distinct indices of [0, d), ascending (Floyd's sampling).
std::vector<uint32_t> Sample(uint64_t d, uint64_t k, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint32_t> idx;
  std::vector<bool> taken(d, false);
  for (uint64_t j = d - k; j < d; ++j) {
    const uint64_t t = std::uniform_int_distribution<uint64_t>(0, j)(rng);
    const uint64_t pick = taken[t] ? j : t;
    taken[pick] = true;
    idx.push_back(static_cast<uint32_t>(pick));
  }
  std::sort(idx.begin(), idx.end());
  return idx;
}

SparseDelta WithValues(uint64_t d, std::vector<uint32_t> idx) {
  SparseDelta s;
  s.dim = d;
  s.indices = std::move(idx);
  for (size_t i = 0; i < s.indices.size(); ++i)
    s.values.push_back(0.25f * static_cast<float>(i % 7) - 0.5f);
  return s;
}

bool Applies(IndexFormat f, const SparseDelta& s) {
  return f != IndexFormat::kDense || s.nnz() == s.dim;
}

// Applies, and small enough to try: a bitmap of d = 2^32 is 512 MiB.
bool Tried(IndexFormat f, const SparseDelta& s) {
  return Applies(f, s) && (f != IndexFormat::kBitmap || s.dim <= (1u << 24));
}

std::string MustEncodeAs(const SparseDelta& s, IndexFormat f,
                         ValueType type = ValueType::kFp32) {
  std::string out;
  const absl::Status st = EncodeSparseDeltaAs(s, type, f, &out);
  INFO("format " << IndexFormatName(f) << ": " << st.message());
  REQUIRE(st.ok());
  return out;
}

// Every applicable form round-trips, at exactly its planned size.
void CheckAllForms(const SparseDelta& s) {
  for (IndexFormat f : kAllFormats) {
    if (!Tried(f, s)) continue;
    INFO("d=" << s.dim << " k=" << s.nnz() << " format "
              << IndexFormatName(f));
    const std::string enc = MustEncodeAs(s, f, ValueType::kBf16);
    auto plan = PlanEncodingAs(s.dim, s.indices, ValueType::kBf16, f);
    REQUIRE(plan.ok());
    CHECK(enc.size() == plan->total());
    CHECK(static_cast<uint8_t>(enc[2]) == static_cast<uint8_t>(f));
    auto dec = DecodeSparseDelta(enc, s.dim, s.nnz());
    INFO((dec.ok() ? "" : std::string(dec.status().message())));
    REQUIRE(dec.ok());
    CHECK(dec->indices == s.indices);
    CHECK(dec->values == s.values);  // multiples of 0.25 survive bf16
  }
}

std::string Bytes(std::initializer_list<int> b) {
  std::string s;
  for (int x : b) s.push_back(static_cast<char>(x));
  return s;
}

void ExpectDecodeError(const std::string& bytes, uint64_t d, uint64_t max_k,
                       const std::string& word) {
  auto dec = DecodeSparseDelta(bytes, d, max_k);
  INFO("expected an error containing \"" << word << "\"");
  REQUIRE_FALSE(dec.ok());
  INFO("got: " << dec.status().message());
  CHECK(dec.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(std::string(dec.status().message()).find(word) != std::string::npos);
}

// Header of a hand-made delta: bf16 values, format f, d and k < 128.
std::string Head(IndexFormat f, int d, int k) {
  return Bytes({0xd1, 2, static_cast<int>(f), d, k});
}

std::string Bf16Ones(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += Bytes({0x80, 0x3f});
  return s;
}

}  // namespace

TEST_CASE("bit streams round-trip fields and long zero runs") {
  std::mt19937_64 rng(3);
  std::vector<std::pair<uint64_t, unsigned>> fields;  // (value, bits)
  uint64_t total = 0;
  for (int i = 0; i < 5000; ++i) {
    const unsigned bits = static_cast<unsigned>(rng() % 65);
    const uint64_t v = bits == 0 ? 0 : rng() >> (64 - bits);
    // Every 50th field a run of zeros, some of them many words long.
    const uint64_t zeros = i % 50 == 0 ? rng() % 700 : 0;
    fields.push_back({zeros, ~0u});
    fields.push_back({v, bits});
    total += zeros + bits;
  }
  std::vector<uint8_t> buf(BitsToBytes(total) + 8, 0xee);  // 0xee: guard
  BitWriter w(buf.data());
  for (auto [v, bits] : fields) {
    if (bits == ~0u) {
      w.PutZeros(v);
    } else {
      w.Put(v, bits);
    }
  }
  CHECK(w.Finish() == buf.data() + BitsToBytes(total));
  CHECK(buf[BitsToBytes(total)] == 0xee);  // nothing stored past the end
  const BitReader r(buf.data(), buf.data() + BitsToBytes(total));
  uint64_t pos = 0;
  for (auto [v, bits] : fields) {
    if (bits == ~0u) {
      for (uint64_t z = 0; z < v; z += 57)
        CHECK(r.Get(pos + z, static_cast<unsigned>(std::min<uint64_t>(
                                 57, v - z))) == 0);
      pos += v;
    } else if (bits <= 57) {
      CHECK(r.Get(pos, bits) == v);
      pos += bits;
    } else {  // wider than one peek: two halves
      CHECK((r.Get(pos, 32) | (r.Get(pos + 32, bits - 32) << 32)) == v);
      pos += bits;
    }
  }
  CHECK(pos == total);
  // The padding of the last byte is zero, and reads past the end see zeros.
  CHECK(r.Get(total, static_cast<unsigned>(BitsToBytes(total) * 8 - total)) ==
        0);
  CHECK(r.Peek(r.size_bits() + 100) == 0);
}

TEST_CASE("the code parameter minimises the worst case and fits the floor") {
  auto brute = [](uint64_t d, uint64_t k) {
    unsigned best = 0;
    for (unsigned b = 1; b < 32; ++b) {
      if (k * (b + 1) + ((d - k) >> b) < k * (best + 1) + ((d - k) >> best))
        best = b;
    }
    return best;
  };
  std::mt19937_64 rng(1);
  for (int t = 0; t < 2000; ++t) {
    const uint64_t d = 1 + rng() % (t % 2 ? 1000 : (uint64_t{1} << 32));
    const uint64_t k = 1 + rng() % d;
    INFO("d=" << d << " k=" << k);
    CHECK(IndexCodeParameter(d, k) == brute(d, k));
    const unsigned b = IndexCodeParameter(d, k);
    CHECK(EliasFanoBits(d, k) == k * (b + 1) + ((d - k) >> b));
  }
  // The published Rice parameters: 3 at density 0.1, 5 at 0.02.
  CHECK(IndexCodeParameter(582026, 58203) == 3);
  CHECK(IndexCodeParameter(582026, 11641) == 5);
  CHECK(IndexCodeParameter(11200000, 1120000) == 3);
  CHECK(IndexCodeParameter(11200000, 224000) == 5);
  CHECK(IndexCodeParameter(1000, 0) == 0);
  CHECK(EliasFanoBits(1000, 0) == 0);
  CHECK(IndexCodeParameter(1000, 1000) == 0);
  CHECK(EliasFanoBits(1000, 1000) == 1000);
  CHECK(IndexCodeParameter(kCodecMaxDim, 1) == 31);
}

TEST_CASE("Golomb-Rice never exceeds Elias-Fano and one big gap attains it") {
  std::mt19937_64 rng(8);
  for (int t = 0; t < 200; ++t) {
    const uint64_t d = 1 + rng() % 100000;
    const uint64_t k = rng() % (d + 1);
    const unsigned b = IndexCodeParameter(d, k);
    const std::vector<uint32_t> idx = Sample(d, k, t);
    INFO("d=" << d << " k=" << k);
    CHECK(GolombRiceBits(idx.data(), k, b) <= EliasFanoBits(d, k));
    if (k == 0) continue;
    std::vector<uint32_t> worst(k);  // 0..k-2, then d-1: gaps 0.., d-k
    for (uint64_t i = 0; i + 1 < k; ++i) worst[i] = static_cast<uint32_t>(i);
    worst[k - 1] = static_cast<uint32_t>(d - 1);
    CHECK(GolombRiceBits(worst.data(), k, b) == EliasFanoBits(d, k));
  }
}

TEST_CASE("every format round-trips the edge cases") {
  const uint64_t big = kCodecMaxDim;
  std::vector<SparseDelta> cases = {
      WithValues(1, {}),
      WithValues(1, {0}),                        // d = 1, k = d
      WithValues(1000, {}),                      // k = 0
      WithValues(1000, {0}),                     // k = 1, first
      WithValues(1000, {999}),                   // k = 1, last index d-1
      WithValues(1000, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}),  // adjacent run
      WithValues(1000, {990, 991, 992, 993, 994, 995, 996, 997, 998, 999}),
      WithValues(1000, {0, 999}),                // one gap of d-2
      WithValues(64, {}),
      WithValues(100000, {5, 99999}),            // huge gap
      WithValues(big, {0, UINT32_MAX}),          // gap of 2^32 - 2
      WithValues(big, {UINT32_MAX}),
      WithValues(big, {0, 1, 2, 1u << 31, UINT32_MAX - 1, UINT32_MAX}),
  };
  {
    std::vector<uint32_t> all(777);
    for (uint32_t i = 0; i < 777; ++i) all[i] = i;
    cases.push_back(WithValues(777, all));  // k = d
    all.erase(all.begin() + 300);
    cases.push_back(WithValues(777, all));  // k = d - 1
  }
  // Long unary runs mixed with dense runs.
  std::vector<uint32_t> mixed;
  for (uint32_t i = 0; i < 200; ++i) mixed.push_back(i);
  for (uint32_t i = 50000; i < 50100; i += 3) mixed.push_back(i);
  mixed.push_back(199999);
  cases.push_back(WithValues(200000, mixed));
  for (uint64_t d : {1, 2, 7, 8, 9, 63, 64, 65, 1000, 4096})
    for (double p : {0.01, 0.1, 0.3, 0.5, 0.9})
      cases.push_back(WithValues(d, Bernoulli(d, p, d)));
  for (const SparseDelta& s : cases) CheckAllForms(s);
}

TEST_CASE("predicted size equals the encoded size for random sets") {
  std::mt19937_64 rng(21);
  for (int t = 0; t < 300; ++t) {
    const uint64_t d = 1 + rng() % 50000;
    const double p = std::ldexp(1.0, -static_cast<int>(rng() % 12));
    const SparseDelta s = WithValues(d, Bernoulli(d, p, t));
    for (ValueType type :
         {ValueType::kFp32, ValueType::kFp16, ValueType::kBf16}) {
      std::string enc;
      REQUIRE(EncodeSparseDeltaTo(s, type, &enc).ok());
      INFO("d=" << d << " k=" << s.nnz());
      CHECK(enc.size() == PredictEncodedSize(d, s.indices, type));
      for (IndexFormat f : kAllFormats) {
        if (!Applies(f, s)) continue;
        CHECK(MustEncodeAs(s, f, type).size() ==
              PlanEncodingAs(d, s.indices, type, f)->total());
      }
    }
  }
}

TEST_CASE("the encoder picks the smallest form with ties in a fixed order") {
  std::mt19937_64 rng(5);
  for (int t = 0; t < 400; ++t) {
    const uint64_t d = 1 + rng() % 20000;
    const double p = std::ldexp(1.0, -static_cast<int>(rng() % 10));
    const SparseDelta s = WithValues(d, t % 9 == 0 ? Sample(d, d, t)
                                                   : Bernoulli(d, p, t));
    const EncodingPlan plan = PlanEncoding(d, s.indices, ValueType::kFp32);
    uint64_t smallest = UINT64_MAX;
    for (IndexFormat f : kAllFormats) {
      if (!Applies(f, s)) continue;
      smallest = std::min(
          smallest, PlanEncodingAs(d, s.indices, ValueType::kFp32, f)
                        ->index_bytes);
    }
    INFO("d=" << d << " k=" << s.nnz() << " picked "
              << IndexFormatName(plan.format));
    CHECK(plan.index_bytes == smallest);
    std::string enc;
    REQUIRE(EncodeSparseDeltaTo(s, ValueType::kFp32, &enc).ok());
    CHECK(static_cast<uint8_t>(enc[2]) == static_cast<uint8_t>(plan.format));
    if (s.nnz() == d) CHECK(plan.format == IndexFormat::kDense);
  }
  // Ties: empty goes to varint gaps; Elias-Fano beats Golomb-Rice only by
  // a tie (one gap of d - k reaches Golomb-Rice's worst case).
  CHECK(PlanEncoding(1000, {}, ValueType::kFp32).format ==
        IndexFormat::kVarintGaps);
  CHECK(PlanEncoding(0, {}, ValueType::kFp32).format ==
        IndexFormat::kVarintGaps);
  std::vector<uint32_t> worst;
  for (uint32_t i = 0; i < 99; ++i) worst.push_back(i);
  worst.push_back(999);
  CHECK(PlanEncoding(1000, worst, ValueType::kFp32).format ==
        IndexFormat::kEliasFano);
  // Random sets at the densities shefl uses go to Golomb-Rice.
  for (double p : {0.001, 0.02, 0.1, 0.25}) {
    INFO("p=" << p);
    CHECK(PlanEncoding(200000, Bernoulli(200000, p, 4), ValueType::kFp32)
              .format == IndexFormat::kGolombRice);
  }
}

TEST_CASE("the size bound holds for random and adversarial sets") {
  std::mt19937_64 rng(13);
  for (int t = 0; t < 300; ++t) {
    const uint64_t d = 1 + rng() % 100000;
    const uint64_t k = t % 4 == 0 ? d - rng() % std::min<uint64_t>(d, 3)
                                  : rng() % (d + 1);
    const ValueType type = t % 2 ? ValueType::kFp16 : ValueType::kFp32;
    const uint64_t bound = PredictEncodedSizeUpperBound(d, k, type);
    INFO("d=" << d << " k=" << k);
    CHECK(PredictEncodedSize(d, Sample(d, k, t), type) <= bound);
    // Every smaller set fits too: the bound is nondecreasing in k.
    if (k > 0) CHECK(PredictEncodedSizeUpperBound(d, k - 1, type) <= bound);
    if (k == 0) continue;
    std::vector<uint32_t> worst(k);  // 0..k-2 and d-1
    for (uint64_t i = 0; i + 1 < k; ++i) worst[i] = static_cast<uint32_t>(i);
    worst[k - 1] = static_cast<uint32_t>(d - 1);
    const uint64_t adversarial = PredictEncodedSize(d, worst, type);
    CHECK(adversarial <= bound);
    // Attained above density 0.02 below k = d, where the dense form may
    // undercut sets of d - 1.
    if (k < d && k * 50 >= d) CHECK(adversarial == bound);
  }
  // k = d: a full delta is smaller than some sets of d - 1, and the bound
  // covers those.
  for (uint64_t d : {8ull, 100ull, 582026ull}) {
    std::vector<uint32_t> all(d);
    for (uint32_t i = 0; i < d; ++i) all[i] = i;
    const uint64_t full = PredictEncodedSize(d, all, ValueType::kFp32);
    all.erase(all.begin() + d / 2);
    const uint64_t less = PredictEncodedSize(d, all, ValueType::kFp32);
    const uint64_t bound = PredictEncodedSizeUpperBound(d, d, ValueType::kFp32);
    INFO("d=" << d);
    CHECK(full <= bound);
    CHECK(less <= bound);
    auto k = LargestKForBudget(d, bound, ValueType::kFp32);
    REQUIRE(k.ok());
    CHECK(*k == d);
  }
}

TEST_CASE("LargestKForBudget with the new forms: k fits and k + 1 does not") {
  for (uint64_t d : {1ull, 9ull, 1000ull, 582026ull, 11200000ull}) {
    for (uint64_t budget : {20ull, 700ull, 40000ull, 3000000ull}) {
      auto k = LargestKForBudget(d, budget, ValueType::kFp16);
      if (!k.ok()) continue;  // below an empty delta
      INFO("d=" << d << " budget=" << budget << " k=" << *k);
      CHECK(PredictEncodedSizeUpperBound(d, *k, ValueType::kFp16) <= budget);
      if (*k < d)
        CHECK(PredictEncodedSizeUpperBound(d, *k + 1, ValueType::kFp16) >
              budget);
      if (*k > 0 && *k < d && d <= 1000000) {
        const SparseDelta s = WithValues(d, Sample(d, *k, budget));
        std::string enc;
        REQUIRE(EncodeSparseDeltaTo(s, ValueType::kFp16, &enc).ok());
        CHECK(enc.size() <= budget);
      }
    }
  }
}

TEST_CASE("index bits within 5 percent of log2 C(d k) at densities 0.1 and 0.02") {
  for (uint64_t d : {582026ull, 11200000ull}) {
    for (double p : {0.1, 0.02}) {
      const std::vector<uint32_t> idx = Bernoulli(d, p, d + 1);
      const EncodingPlan plan = PlanEncoding(d, idx, ValueType::kFp32);
      const double ratio =
          8.0 * plan.index_bytes / EntropyFloorBits(d, idx.size());
      INFO("d=" << d << " p=" << p << " index bits / floor = " << ratio);
      CHECK(plan.format == IndexFormat::kGolombRice);
      CHECK(ratio <= 1.05);
      CHECK(ratio >= 1.0);
    }
  }
}

TEST_CASE("byte layout of the bit codes and the dense form") {
  const SparseDelta s{300, {2, 3, 200}, {1.0f, -2.5f, 0.5f}};
  const std::string head = Bytes({0xd1, 1, 0, 0xac, 0x02, 3});  // fp16
  const std::string values = Bytes({0x00, 0x3c, 0x00, 0xc1, 0x00, 0x38});
  auto with_format = [&](IndexFormat f) {
    std::string h = head;
    h[2] = static_cast<char>(f);
    return h;
  };
  // b = 6; gaps 2, 0, 196 = 3*64 + 4: codes 1|000010... as bits, 24 in all.
  std::string rice;
  REQUIRE(EncodeSparseDeltaAs(s, ValueType::kFp16, IndexFormat::kGolombRice,
                              &rice).ok());
  CHECK(rice == with_format(IndexFormat::kGolombRice) +
                    Bytes({0x85, 0x00, 0x12}) + values);
  // x = 2, 2, 198: lows 2, 2, 6 (18 bits), highs 0, 0, 3 in 3 + 4 bits.
  std::string ef;
  REQUIRE(EncodeSparseDeltaAs(s, ValueType::kFp16, IndexFormat::kEliasFano,
                              &ef).ok());
  CHECK(ef == with_format(IndexFormat::kEliasFano) +
                  Bytes({0x82, 0x60, 0x8c, 0x00}) + values);
  // The smallest is Golomb-Rice (3 bytes against varint's 4).
  std::string picked;
  REQUIRE(EncodeSparseDeltaTo(s, ValueType::kFp16, &picked).ok());
  CHECK(picked == rice);
  // Dense: values only.
  const SparseDelta full{3, {0, 1, 2}, {1.0f, -2.5f, 0.5f}};
  REQUIRE(EncodeSparseDeltaTo(full, ValueType::kFp16, &picked).ok());
  CHECK(picked == Bytes({0xd1, 1, 4, 3, 3}) + values);
  std::string out = "stale";
  const absl::Status st =
      EncodeSparseDeltaAs(s, ValueType::kFp16, IndexFormat::kDense, &out);
  CHECK_FALSE(st.ok());
  CHECK(std::string(st.message()).find("k == d") != std::string::npos);
  CHECK(out.empty());
}

TEST_CASE("decoder refuses bad Golomb-Rice and Elias-Fano and dense bytes") {
  using F = IndexFormat;
  // d = 10, k = 1: b = 2; index 5 is gap 5 = 1*4 + 1: bits 0 1 1 0 = 0x06.
  const std::string rice1 = Head(F::kGolombRice, 10, 1);
  REQUIRE(DecodeSparseDelta(rice1 + Bytes({0x06}) + Bf16Ones(1), 10, 1).ok());
  ExpectDecodeError(rice1 + Bytes({0x16}) + Bf16Ones(1), 10, 1,
                    "non-zero padding after the Golomb-Rice index section");
  // Quotient 2, remainder 2: index 10.
  ExpectDecodeError(rice1 + Bytes({0x14}) + Bf16Ones(1), 10, 1,
                    "index 10 at position 0 out of range [0, 10)");
  // Quotient 3 (four 0 bits before the 1).
  ExpectDecodeError(rice1 + Bytes({0x08}) + Bf16Ones(1), 10, 1,
                    "quotient above");
  // Nothing but 0 bits to the end.
  ExpectDecodeError(Head(F::kGolombRice, 100, 1) + Bytes({0x00}), 100, 1,
                    "truncated index section (Golomb-Rice gap at position 0)");
  ExpectDecodeError(Head(F::kGolombRice, 10, 2), 10, 2,
                    "truncated index section (Golomb-Rice needs at least");
  // d = 10, k = 2: b = 1; indices 3, 7: x = 3, 6; lows 1, 0; upper
  // 0 1 0 0 1 0 from bit 2: 0x49.
  const std::string ef2 = Head(F::kEliasFano, 10, 2);
  auto dec = DecodeSparseDelta(ef2 + Bytes({0x49}) + Bf16Ones(2), 10, 2);
  REQUIRE(dec.ok());
  CHECK(dec->indices == std::vector<uint32_t>{3, 7});
  ExpectDecodeError(ef2 + Bytes({0xc9}) + Bf16Ones(2), 10, 2,
                    "Elias-Fano bits after the last index: bit 7");
  ExpectDecodeError(ef2 + Bytes({0x09}) + Bf16Ones(2), 10, 2,
                    "Elias-Fano upper bits hold 1 ones, header k=2");
  ExpectDecodeError(ef2 + Bytes({0x19}) + Bf16Ones(2), 10, 2,
                    "index 3 at position 1 not above its predecessor 3");
  ExpectDecodeError(ef2 + Bytes({0x8b}) + Bf16Ones(2), 10, 2,
                    "index 10 at position 1 out of range [0, 10)");
  ExpectDecodeError(ef2, 10, 2,
                    "truncated index section (Elias-Fano needs 1 bytes");
  // Dense needs k = d and all d values.
  ExpectDecodeError(Head(F::kDense, 10, 9) + Bf16Ones(9), 10, 9,
                    "dense index format needs k == d (k=9, d=10)");
  ExpectDecodeError(Head(F::kDense, 10, 10) + Bf16Ones(9), 10, 10,
                    "truncated value section");
  ExpectDecodeError(Head(F::kDense, 10, 10) + Bf16Ones(11), 10, 10,
                    "2 trailing bytes");
  REQUIRE(DecodeSparseDelta(Head(F::kDense, 10, 10) + Bf16Ones(10), 10, 10)
              .ok());
  ExpectDecodeError(Head(static_cast<F>(5), 10, 1), 10, 1,
                    "unknown index format 5 (this decoder knows 0-4");
}

TEST_CASE("new forms: every truncation refused and every accepted corruption canonical") {
  const SparseDelta s = WithValues(3000, Bernoulli(3000, 0.05, 2));
  std::vector<uint32_t> all(50);
  for (uint32_t i = 0; i < 50; ++i) all[i] = i;
  const SparseDelta full = WithValues(50, all);
  for (IndexFormat f : {IndexFormat::kGolombRice, IndexFormat::kEliasFano,
                        IndexFormat::kDense}) {
    const SparseDelta& src = f == IndexFormat::kDense ? full : s;
    const std::string good = MustEncodeAs(src, f, ValueType::kFp16);
    INFO("format " << IndexFormatName(f));
    for (size_t n = 0; n < good.size(); ++n)
      CHECK_FALSE(DecodeSparseDelta(good.substr(0, n), src.dim, src.dim).ok());
    std::mt19937_64 rng(7);
    int accepted = 0;
    for (int i = 0; i < 3000; ++i) {
      std::string bad = good;
      // Flip one bit of the header or index section (values are any bits).
      const size_t at = rng() % (good.size() - 2 * src.nnz());
      bad[at] ^= static_cast<char>(1 << (rng() % 8));
      auto dec = DecodeSparseDelta(bad, src.dim, src.dim);
      if (!dec.ok()) continue;
      ++accepted;
      // What decodes is valid and is the one encoding of itself in its form.
      std::string again;
      REQUIRE(EncodeSparseDeltaAs(*dec, ValueType::kFp16,
                                  static_cast<IndexFormat>(bad[2]), &again)
                  .ok());
      CHECK(again == bad);
    }
    CHECK(accepted < 3000);
  }
}

}  // namespace shefl
