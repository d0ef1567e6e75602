// The codec's shared test vectors (tests/data/codec_vectors.json): what the
// C++ encoder writes for a set of sparse deltas, in every index form and
// value type, and what the C++ decoder says of malformed bytes. Other
// implementations of the wire format (the Python client,
// python/tests/test_codec.py) read the same file and must produce the same
// bytes and refuse the same inputs with the same messages.
// This test makes the vectors anew and fails when the file differs; run
// with SHEFL_WRITE_CODEC_VECTORS=1 to rewrite it after a deliberate change.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/sparse/codec.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

const std::string kVectors = std::string(SHEFL_SOURCE_DIR) + "/tests/data/codec_vectors.json";

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

struct Case {
  std::string name;
  SparseDelta delta;
};

SparseDelta Make(uint64_t d, std::vector<uint32_t> idx, std::vector<float> values) {
  SparseDelta s;
  s.dim = d;
  s.indices = std::move(idx);
  s.values = std::move(values);
  return s;
}

// Values that exercise the narrowing: ties to even, subnormals, signed
// zero, the largest finite fp16, tiny values that round to zero.
std::vector<float> EdgeValues(size_t k, uint32_t seed) {
  const std::vector<float> edges = {0.0f,     -0.0f,      1.0f,       -2.5f,
                                    65504.0f, 1.00048828125f,  // fp16 tie
                                    1.0009765625f, 5.9604645e-8f, 1e-10f,
                                    -3.0517578e-5f, 1.00390625f,  // bf16 tie
                                    123.456f};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.05f);
  std::vector<float> v(k);
  for (size_t i = 0; i < k; ++i) v[i] = i < edges.size() ? edges[i] : normal(rng);
  return v;
}

std::vector<uint32_t> RandomSet(uint64_t d, size_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint32_t> all(d);
  for (uint64_t i = 0; i < d; ++i) all[i] = static_cast<uint32_t>(i);
  std::shuffle(all.begin(), all.end(), rng);
  all.resize(k);
  std::sort(all.begin(), all.end());
  return all;
}

std::vector<Case> Cases() {
  std::vector<Case> c;
  c.push_back({"empty d=0", Make(0, {}, {})});
  c.push_back({"empty d=10", Make(10, {}, {})});
  std::vector<uint32_t> all10(10);
  for (uint32_t i = 0; i < 10; ++i) all10[i] = i;
  c.push_back({"dense d=10", Make(10, all10, EdgeValues(10, 1))});
  c.push_back({"one at the end d=9", Make(9, {8}, {0.25f})});
  c.push_back({"random 100 of 1000", Make(1000, RandomSet(1000, 100, 2), EdgeValues(100, 2))});
  c.push_back({"random 40 of 64", Make(64, RandomSet(64, 40, 3), EdgeValues(40, 3))});
  std::vector<uint32_t> runs;
  for (uint32_t start : {10u, 5000u, 15000u})
    for (uint32_t j = 0; j < 50; ++j) runs.push_back(start + j);
  c.push_back({"runs 150 of 20000", Make(20000, runs, EdgeValues(150, 4))});
  c.push_back({"wide gaps 5 of 40000",  // gaps of 1, 2 and 3 varint bytes
               Make(40000, {0, 127, 128, 20000, 39999}, EdgeValues(5, 5))});
  c.push_back({"random 600 of 6000", Make(6000, RandomSet(6000, 600, 6), EdgeValues(600, 6))});
  return c;
}

nlohmann::json Encodings() {
  nlohmann::json out = nlohmann::json::array();
  for (const Case& c : Cases()) {
    nlohmann::json v;
    v["name"] = c.name;
    v["d"] = c.delta.dim;
    v["indices"] = c.delta.indices;
    std::vector<uint32_t> bits;
    for (float f : c.delta.values) bits.push_back(Bits(f));
    v["value_bits"] = bits;  // fp32 bit patterns: exact in JSON
    for (ValueType t : {ValueType::kFp32, ValueType::kFp16, ValueType::kBf16}) {
      auto smallest = EncodeSparseDelta(c.delta, t);
      REQUIRE(smallest.ok());
      nlohmann::json e;
      e["smallest"] = Hex(*smallest);
      e["format"] = IndexFormatName(PlanEncoding(c.delta.dim, c.delta.indices, t).format);
      for (uint8_t f = 0; f < kNumIndexFormats; ++f) {
        std::string bytes;
        if (EncodeSparseDeltaAs(c.delta, t, static_cast<IndexFormat>(f), &bytes).ok())
          e["as"][IndexFormatName(static_cast<IndexFormat>(f))] = Hex(bytes);
      }
      v["encodings"][ValueTypeName(t)] = e;
    }
    out.push_back(v);
  }
  return out;
}

// Deltas the encoder refuses, and its message.
nlohmann::json EncodeErrors() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Bad {
    std::string name;
    SparseDelta delta;
    ValueType type;
  };
  const std::vector<Bad> bad = {
      {"fp16 overflow", Make(10, {1, 4}, {1.0f, 70000.0f}), ValueType::kFp16},
      {"fp16 rounds to inf", Make(10, {2}, {65520.0f}), ValueType::kFp16},
      {"bf16 overflow", Make(10, {3}, {3.4028235e38f}), ValueType::kBf16},
      {"NaN", Make(10, {5, 6}, {0.5f, nan}), ValueType::kFp32},
      {"Inf", Make(10, {7}, {-inf}), ValueType::kFp16},
      {"index out of range", Make(10, {3, 10}, {1.0f, 2.0f}), ValueType::kFp32},
      {"duplicate index", Make(10, {3, 3}, {1.0f, 2.0f}), ValueType::kFp32},
      {"descending index", Make(10, {4, 2}, {1.0f, 2.0f}), ValueType::kFp32},
  };
  nlohmann::json out = nlohmann::json::array();
  for (const Bad& b : bad) {
    auto r = EncodeSparseDelta(b.delta, b.type);
    REQUIRE_FALSE(r.ok());
    std::vector<uint32_t> bits;
    for (float f : b.delta.values) bits.push_back(Bits(f));
    out.push_back({{"name", b.name},
                   {"d", b.delta.dim},
                   {"indices", b.delta.indices},
                   {"value_bits", bits},
                   {"value_type", ValueTypeName(b.type)},
                   {"error", std::string(r.status().message())}});
  }
  return out;
}

std::string Unhex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// Malformed inputs, each derived from a valid encoding by one change.
nlohmann::json DecodeErrors() {
  const SparseDelta base = Make(1000, RandomSet(1000, 100, 2), EdgeValues(100, 2));
  auto enc = [&](IndexFormat f, ValueType t = ValueType::kFp32) {
    std::string out;
    REQUIRE(EncodeSparseDeltaAs(base, t, f, &out).ok());
    return out;
  };
  const std::string varint = enc(IndexFormat::kVarintGaps);
  const std::string bitmap = enc(IndexFormat::kBitmap);
  const std::string rice = enc(IndexFormat::kGolombRice);
  const std::string fano = enc(IndexFormat::kEliasFano);
  const size_t header = 3 + 2 + 1;  // d = 1000: 2 varint bytes; k = 100: 1
  auto with = [](std::string s, size_t at, uint8_t byte) {
    s[at] = static_cast<char>(byte);
    return s;
  };
  auto flip = [](std::string s, size_t at, uint8_t mask) {
    s[at] = static_cast<char>(static_cast<uint8_t>(s[at]) ^ mask);
    return s;
  };
  std::string dense;
  {
    SparseDelta d10 = Make(4, {0, 1, 2, 3}, {1.0f, 2.0f, 3.0f, 4.0f});
    REQUIRE(EncodeSparseDeltaAs(d10, ValueType::kFp32, IndexFormat::kDense, &dense).ok());
  }
  struct Bad {
    std::string name;
    std::string bytes;
    uint64_t dim;
    uint64_t max_k;
  };
  const std::vector<Bad> bad = {
      {"empty input", "", 1000, 1000},
      {"bad magic", with(varint, 0, 0xA1), 1000, 1000},
      {"version 2", with(varint, 0, 0xD2), 1000, 1000},
      {"value type 3", with(varint, 1, 3), 1000, 1000},
      {"index format 5", with(varint, 2, 5), 1000, 1000},
      {"truncated d", varint.substr(0, 4), 1000, 1000},
      {"dimension mismatch", varint, 999, 1000},
      {"k above max_k", varint, 1000, 99},
      {"k above d", std::string("\xD1\x00\x00\x04\x05", 5), 4, 100},
      {"non-canonical d", std::string("\xD1\x00\x00\x84\x00\x00", 6), 4, 100},
      {"varint overflow in d", std::string("\xD1\x00\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02", 13), 4, 100},
      {"truncated varint gaps", varint.substr(0, header + 50), 1000, 1000},
      {"varint gap out of range", with(varint, header, 0x7f), 1000, 1000},
      {"truncated bitmap", bitmap.substr(0, header + 100), 1000, 1000},
      {"bitmap count mismatch", flip(bitmap, header, 0x01), 1000, 1000},
      {"bitmap bit past d", with(std::string("\xD1\x00\x01\x09\x01\x00\x02", 7) + std::string(4, '\0'), 5, 0x00), 9, 9},
      {"truncated golomb-rice", rice.substr(0, header + 10), 1000, 1000},
      {"golomb-rice padding", flip(rice, rice.size() - 400 - 1, 0x80), 1000, 1000},
      {"truncated elias-fano", fano.substr(0, header + 10), 1000, 1000},
      {"elias-fano bits after the last index", flip(fano, fano.size() - 400 - 1, 0x80), 1000, 1000},
      {"dense with k != d", with(varint, 2, 4), 1000, 1000},
      {"truncated dense values", dense.substr(0, dense.size() - 1), 4, 4},
      {"truncated values", varint.substr(0, varint.size() - 3), 1000, 1000},
      {"trailing bytes", varint + "x", 1000, 1000},
      {"NaN value", varint.substr(0, varint.size() - 4) + std::string("\x00\x00\xc0\x7f", 4), 1000, 1000},
      {"Inf fp16 value", enc(IndexFormat::kVarintGaps, ValueType::kFp16).substr(0, varint.size() - 400 + 200 - 2) + std::string("\x00\x7c", 2), 1000, 1000},
  };
  nlohmann::json out = nlohmann::json::array();
  for (const Bad& b : bad) {
    auto r = DecodeSparseDelta(b.bytes, b.dim, b.max_k);
    INFO(b.name);
    REQUIRE_FALSE(r.ok());
    out.push_back({{"name", b.name},
                   {"bytes", Hex(b.bytes)},
                   {"expected_dim", b.dim},
                   {"max_k", b.max_k},
                   {"error", std::string(r.status().message())}});
  }
  return out;
}

nlohmann::json Vectors() {
  return {{"format", "shefl sparse delta, version 1 (common/sparse/codec.h)"},
          {"encodings", Encodings()},
          {"encode_errors", EncodeErrors()},
          {"decode_errors", DecodeErrors()}};
}

TEST_CASE("the shared codec vectors are what this encoder and decoder do") {
  // One line per vector: readable diffs, no indentation bloat.
  const nlohmann::json v = Vectors();
  std::string now = "{\"format\": " + v["format"].dump();
  for (const char* part : {"encodings", "encode_errors", "decode_errors"}) {
    now += ",\n\"" + std::string(part) + "\": [";
    bool first = true;
    for (const auto& e : v[part]) {
      now += (first ? "\n" : ",\n") + e.dump();
      first = false;
    }
    now += "]";
  }
  now += "}\n";
  if (const char* w = std::getenv("SHEFL_WRITE_CODEC_VECTORS"); w && std::string(w) == "1")
    testing::WriteFile(kVectors, now);
  const std::string file = testing::ReadFile(kVectors);
  INFO("tests/data/codec_vectors.json differs from what the codec does now; after a "
       "deliberate change: SHEFL_WRITE_CODEC_VECTORS=1 build/bin/codec_vectors_test");
  CHECK(file == now);
  // Every vector decodes back to its delta (the file is self-consistent).
  const auto parsed = nlohmann::json::parse(file);
  CHECK(parsed == v);
  int decoded = 0;
  for (const auto& e : parsed["encodings"])
    for (const auto& [type, enc] : e["encodings"].items())
      for (const auto& [format, hex] : enc["as"].items()) {
        auto r = DecodeSparseDelta(Unhex(hex.get<std::string>()), e["d"].get<uint64_t>(),
                                   e["d"].get<uint64_t>());
        INFO(e["name"] << " " << type << " " << format);
        REQUIRE(r.ok());
        CHECK(r->indices == e["indices"].get<std::vector<uint32_t>>());
        ++decoded;
      }
  CHECK(decoded > 80);
}

}  // namespace
}  // namespace shefl
