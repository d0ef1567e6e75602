// The daemon's own compression step (DeltaCompressor, which LocalTrainer
// calls after training) over several rounds: the residual is carried into
// the next round's top-k, and fp16 rounding is folded into the residual.
#include "client/delta_compressor.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

at::Tensor RandomDelta(int64_t d, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return at::randn({d}, gen, at::kFloat);
}

struct Sent {
  SparseDelta decoded;  // what the coordinator reads
  uint64_t nnz = 0;
};

Sent MustCompress(DeltaCompressor& c, int64_t client, int64_t model,
                  int64_t round, const at::Tensor& delta, int64_t k) {
  Sent out;
  auto enc = c.Compress(client, model, round, delta, k, &out.nnz);
  INFO((enc.ok() ? "" : std::string(enc.status().message())));
  REQUIRE(enc.ok());
  auto dec = DecodeSparseDelta(*enc, delta.numel(), k);
  REQUIRE(dec.ok());
  out.decoded = std::move(*dec);
  return out;
}

at::Tensor Fp16(const at::Tensor& x) { return x.to(at::kHalf).to(at::kFloat); }

TEST_CASE("the daemon's compressor carries the residual and fp16 rounding over two rounds") {
  const int64_t d = 4000, k = 400;
  DeltaCompressor c(ValueType::kFp16, /*error_feedback=*/true, at::kCPU);
  REQUIRE(c.residuals() != nullptr);
  const at::Tensor d1 = RandomDelta(d, 1), d2 = RandomDelta(d, 2);

  // Round 1: the top-k of d1 goes out in fp16.
  const Sent s1 = MustCompress(c, 3, 1, 1, d1, k);
  CHECK(s1.nnz == static_cast<uint64_t>(k));
  REQUIRE(s1.decoded.nnz() == static_cast<size_t>(k));
  const at::Tensor sent1 = Densify(s1.decoded);
  const at::Tensor idx1 = at::tensor(
      std::vector<int64_t>(s1.decoded.indices.begin(), s1.decoded.indices.end()));
  CHECK(at::equal(sent1.index_select(0, idx1), Fp16(d1.index_select(0, idx1))));
  // The residual is exactly what did not reach the coordinator: the dropped
  // coordinates and the fp16 rounding of the sent ones.
  const at::Tensor r1 = c.residuals()->Newest(3, 1);
  REQUIRE(r1.defined());
  CHECK(at::equal(r1, d1 - sent1));
  CHECK(r1.index_select(0, idx1).abs().max().item<float>() > 0);  // rounding

  // Round 2: top-k of d2 + r1, not of d2 alone.
  const Sent s2 = MustCompress(c, 3, 1, 2, d2, k);
  DeltaCompressor plain(ValueType::kFp16, /*error_feedback=*/false, at::kCPU);
  CHECK(plain.residuals() == nullptr);
  const Sent without = MustCompress(plain, 3, 1, 2, d2, k);
  auto expected = TopK(d2 + r1, k);
  REQUIRE(expected.ok());
  CHECK(s2.decoded.indices == expected->indices);
  CHECK(s2.decoded.indices != without.decoded.indices);
  const at::Tensor sent2 = Densify(s2.decoded);
  const at::Tensor r2 = c.residuals()->Newest(3, 1);
  CHECK(at::equal(r2, (d2 + r1) - sent2));
  // Over both rounds nothing was lost: sent + residual = raw deltas.
  CHECK(at::allclose(sent1 + sent2 + r2, d1 + d2, /*rtol=*/0, /*atol=*/1e-5));

  // Residuals are per (client, model): another pair starts clean.
  const Sent other = MustCompress(c, 4, 1, 2, d2, k);
  CHECK(other.decoded.indices == without.decoded.indices);
}

TEST_CASE("over five fp16 rounds the residual closes the gap to the raw deltas") {
  const int64_t d = 3000, k = 300;
  DeltaCompressor c(ValueType::kFp16, /*error_feedback=*/true, at::kCPU);
  at::Tensor raw_sum = at::zeros({d}), sent_sum = at::zeros({d});
  for (int round = 0; round < 5; ++round) {
    const at::Tensor raw = RandomDelta(d, 100 + round);
    raw_sum += raw;
    sent_sum += Densify(MustCompress(c, 1, 0, round + 1, raw, k).decoded);
  }
  CHECK(at::allclose(sent_sum + c.residuals()->Newest(1, 0), raw_sum, 0, 1e-5));
  // Without the residual the gap would be large.
  CHECK((sent_sum - raw_sum).abs().max().item<float>() > 0.5f);
}

TEST_CASE("with fp32 values the sent coordinates leave no residual") {
  const int64_t d = 2000, k = 100;
  DeltaCompressor c(ValueType::kFp32, /*error_feedback=*/true, at::kCPU);
  const at::Tensor d1 = RandomDelta(d, 9);
  const Sent s = MustCompress(c, 0, 0, 1, d1, k);
  const at::Tensor idx = at::tensor(
      std::vector<int64_t>(s.decoded.indices.begin(), s.decoded.indices.end()));
  CHECK(at::equal(c.residuals()->Newest(0, 0).index_select(0, idx),
                  at::zeros({k})));
  CHECK(at::equal(c.residuals()->Newest(0, 0) + Densify(s.decoded), d1));
}

TEST_CASE("a refused upload puts the residual before it back in force") {
  const int64_t d = 2000, k = 100;
  DeltaCompressor c(ValueType::kFp32, /*error_feedback=*/true, at::kCPU);
  const at::Tensor d1 = RandomDelta(d, 21), d2 = RandomDelta(d, 22);
  MustCompress(c, 5, 0, 1, d1, k);
  REQUIRE(c.Settle(5, 0, 1, /*accepted=*/true).ok());
  const at::Tensor r1 = c.residuals()->Newest(5, 0).clone();
  MustCompress(c, 5, 0, 2, d2, k);
  CHECK_FALSE(at::equal(c.residuals()->Newest(5, 0), r1));
  REQUIRE(c.Settle(5, 0, 2, /*accepted=*/false).ok());
  CHECK(at::equal(c.residuals()->Newest(5, 0), r1));
  // Round 3 adds r1 to its delta: what round 2 tried to send is gone, what
  // round 1 left is not.
  const Sent s3 = MustCompress(c, 5, 0, 3, d2, k);
  auto expected = TopK(d2 + r1, k);
  REQUIRE(expected.ok());
  CHECK(s3.decoded.indices == expected->indices);
}

TEST_CASE("a round handed out again starts from the residual in force before it") {
  const int64_t d = 2000, k = 100;
  DeltaCompressor c(ValueType::kFp16, /*error_feedback=*/true, at::kCPU);
  const at::Tensor d1 = RandomDelta(d, 31), d2 = RandomDelta(d, 32);
  MustCompress(c, 2, 1, 1, d1, k);
  REQUIRE(c.Settle(2, 1, 1, true).ok());
  const Sent first = MustCompress(c, 2, 1, 2, d2, k);
  const at::Tensor left = c.residuals()->Newest(2, 1).clone();
  // Accepted, then the coordinator crashed before its checkpoint and hands
  // round 2 out again: the rerun must send what the first run sent.
  REQUIRE(c.Settle(2, 1, 2, true).ok());
  const Sent again = MustCompress(c, 2, 1, 2, d2, k);
  CHECK(again.decoded.indices == first.decoded.indices);
  CHECK(again.decoded.values == first.decoded.values);
  CHECK(at::equal(c.residuals()->Newest(2, 1), left));
}

TEST_CASE("staged residuals survive a restart and another run's are not loaded") {
  testing::TempDir dir;
  const std::string folder = dir / "residuals";
  const int64_t d = 1500, k = 50;
  const at::Tensor d1 = RandomDelta(d, 41), d2 = RandomDelta(d, 42);
  at::Tensor committed, staged;
  Sent first5;
  {
    DeltaCompressor c(ValueType::kFp32, true, at::kCPU, folder, 77);
    int loaded = -1;
    REQUIRE(c.residuals()->Load(&loaded).ok());
    CHECK(loaded == 0);
    MustCompress(c, 9, 2, 4, d1, k);
    REQUIRE(c.Settle(9, 2, 4, true).ok());
    committed = c.residuals()->Newest(9, 2).clone();
    // Staged, never answered: in force, as in memory, until round 5 is
    // handed out again.
    first5 = MustCompress(c, 9, 2, 5, d2, k);
    staged = c.residuals()->Newest(9, 2).clone();
  }
  DeltaCompressor restarted(ValueType::kFp32, true, at::kCPU, folder, 77);
  int loaded = 0;
  REQUIRE(restarted.residuals()->Load(&loaded).ok());
  CHECK(loaded == 1);
  REQUIRE(restarted.residuals()->Newest(9, 2).defined());
  CHECK(at::equal(restarted.residuals()->Newest(9, 2), staged));
  // The coordinator died too and hands round 5 out again: the rerun starts
  // from round 4's residual and sends what the first run sent.
  const Sent again = MustCompress(restarted, 9, 2, 5, d2, k);
  CHECK(again.decoded.indices == first5.decoded.indices);
  CHECK(again.decoded.values == first5.decoded.values);
  // A daemon that hosts other clients reads none of these.
  DeltaCompressor neighbour(ValueType::kFp32, true, at::kCPU, folder, 77);
  REQUIRE(neighbour.residuals()->Load(&loaded, {1, 2, 3}).ok());
  CHECK(loaded == 0);
  DeltaCompressor other(ValueType::kFp32, true, at::kCPU, folder, 78);
  REQUIRE(other.residuals()->Load(&loaded).ok());
  CHECK(loaded == 0);
  CHECK_FALSE(other.residuals()->Newest(9, 2).defined());
}

TEST_CASE("on disk a pair keeps its three newest rounds and loses refused ones") {
  testing::TempDir dir;
  const std::string folder = dir / "residuals";
  const int64_t d = 400, k = 20;
  DeltaCompressor c(ValueType::kFp32, true, at::kCPU, folder, 5);
  int loaded = 0;
  REQUIRE(c.residuals()->Load(&loaded).ok());
  for (int64_t round = 1; round <= 5; ++round) {
    MustCompress(c, 3, 0, round, RandomDelta(d, 50 + round), k);
    REQUIRE(c.Settle(3, 0, round, true).ok());
  }
  auto files = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(folder))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  CHECK(files() == std::vector<std::string>{"c3-m0-r3.ef", "c3-m0-r4.ef",
                                            "c3-m0-r5.ef"});
  // Round 6 staged: three kept counting it; refused: its file goes too.
  MustCompress(c, 3, 0, 6, RandomDelta(d, 60), k);
  CHECK(files() == std::vector<std::string>{"c3-m0-r4.ef", "c3-m0-r5.ef",
                                            "c3-m0-r6.ef"});
  REQUIRE(c.Settle(3, 0, 6, /*accepted=*/false).ok());
  CHECK(files() == std::vector<std::string>{"c3-m0-r4.ef", "c3-m0-r5.ef"});
  // Round 5 handed out again: the files of 5 and later go with it, and the
  // rerun's residual takes its place.
  MustCompress(c, 3, 0, 5, RandomDelta(d, 55), k);
  CHECK(files() == std::vector<std::string>{"c3-m0-r4.ef", "c3-m0-r5.ef"});
  c.residuals()->InForce(3, 0, 5);
  CHECK(files() == std::vector<std::string>{"c3-m0-r4.ef"});
}

}  // namespace
}  // namespace shefl
