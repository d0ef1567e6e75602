// The daemon's own compression step (DeltaCompressor, which LocalTrainer
// calls after training) over several rounds: the residual is carried into
// the next round's top-k, and fp16 rounding is folded into the residual.
#include "client/delta_compressor.h"

#include <ATen/ATen.h>

#include <catch2/catch.hpp>

#include <string>

#include "tests/test_support.h"

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

TEST_CASE("accepted residuals survive a restart and another run's are not loaded") {
  testing::TempDir dir;
  const std::string folder = dir / "residuals";
  const int64_t d = 1500, k = 50;
  const at::Tensor d1 = RandomDelta(d, 41), d2 = RandomDelta(d, 42);
  at::Tensor committed;
  {
    DeltaCompressor c(ValueType::kFp32, true, at::kCPU, folder, 77);
    int loaded = -1;
    REQUIRE(c.residuals()->Load(&loaded).ok());
    CHECK(loaded == 0);
    MustCompress(c, 9, 2, 4, d1, k);
    REQUIRE(c.Settle(9, 2, 4, true).ok());
    committed = c.residuals()->Newest(9, 2).clone();
    MustCompress(c, 9, 2, 5, d2, k);  // staged, never answered: not on disk
  }
  DeltaCompressor restarted(ValueType::kFp32, true, at::kCPU, folder, 77);
  int loaded = 0;
  REQUIRE(restarted.residuals()->Load(&loaded).ok());
  CHECK(loaded == 1);
  REQUIRE(restarted.residuals()->Newest(9, 2).defined());
  CHECK(at::equal(restarted.residuals()->Newest(9, 2), committed));
  DeltaCompressor other(ValueType::kFp32, true, at::kCPU, folder, 78);
  REQUIRE(other.residuals()->Load(&loaded).ok());
  CHECK(loaded == 0);
  CHECK_FALSE(other.residuals()->Newest(9, 2).defined());
}

}  // namespace
}  // namespace shefl
