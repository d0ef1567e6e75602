// A real coordinator on 127.0.0.1, and the test as its only daemon, talking
// gRPC over the socket: exact upload framing, every kind of bad upload
// refused with a reason, counted, and kept away from the global models, a
// late update of a model kept out of that model's next aggregate. (A round
// closed by its deadline: round_deadline_test.cc.)
#include "tests/coordinator_harness.h"  // first: see its comment

#include <thread>

#include "common/sparse/varint.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

void AppendVarint(std::string* out, uint64_t v) {
  uint8_t buf[10];
  const uint8_t* end = PutVarint(buf, v);
  out->append(reinterpret_cast<const char*>(buf), end - buf);
}

TEST_CASE("bad uploads are refused with a reason, counted, and never touch a model") {
  // Rounds close when the test has uploaded every assigned pair (zeros
  // where it has nothing to say), not at the deadline: that is only a
  // backstop, long enough for a loaded machine.
  Harness h("round_deadline_s: 300\n");
  auto tasks = h.NextTasks();
  REQUIRE(tasks.size() == 5u);
  const v1::Task* lpc = FindTask(tasks, 1);
  REQUIRE(lpc);
  const v1::ModelTask& mt = lpc->models(0);
  const uint64_t d = h.dim(), k = mt.k();
  std::vector<std::vector<float>> before;
  for (int m = 0; m < 3; ++m) before.push_back(h.Weights(m));
  auto good = *EncodeSparseDelta(Delta(d, k), ValueType::kFp32);

  auto expect = [&](grpc::Status st, grpc::StatusCode code, const char* word) {
    INFO(st.error_message());
    CHECK(st.error_code() == code);
    CHECK_THAT(st.error_message(), Catch::Contains(word));
  };
  // malformed: no header on the first chunk
  expect(h.Upload(HeaderFor(h.session, *lpc, mt, good.size()), good, false),
         grpc::StatusCode::INVALID_ARGUMENT, "header");
  // stale model version
  auto stale = HeaderFor(h.session, *lpc, mt, good.size());
  stale.set_model_version(mt.model_version() + 1);
  expect(h.Upload(stale, good), grpc::StatusCode::FAILED_PRECONDITION, "stale");
  // a model the client was not assigned
  auto other = HeaderFor(h.session, *lpc, mt, good.size());
  other.set_model_id((mt.model_id() + 1) % 3);
  expect(h.Upload(other, good), grpc::StatusCode::PERMISSION_DENIED,
         "not assigned");
  // an index out of range (hand-made bytes: the encoder would refuse it)
  std::string oor;
  oor.push_back(static_cast<char>(kCodecMagicVersion));
  oor.push_back(0);  // fp32
  oor.push_back(0);  // varint gaps
  AppendVarint(&oor, d);
  AppendVarint(&oor, 1);
  AppendVarint(&oor, d + 5);
  const float one = 1;
  oor.append(reinterpret_cast<const char*>(&one), 4);
  expect(h.Upload(HeaderFor(h.session, *lpc, mt, oor.size()), oor),
         grpc::StatusCode::INVALID_ARGUMENT, "out of range");
  // a NaN value
  std::string nan = good;
  const uint32_t qnan = 0x7fc00000u;
  std::memcpy(&nan[nan.size() - 4], &qnan, 4);
  expect(h.Upload(HeaderFor(h.session, *lpc, mt, nan.size()), nan),
         grpc::StatusCode::INVALID_ARGUMENT, "NaN");
  // k above the budget
  auto big = *EncodeSparseDelta(Delta(d, k + 1), ValueType::kFp32);
  auto st = h.Upload(HeaderFor(h.session, *lpc, mt, big.size()), big);
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  // a declared size that does not match the bytes sent
  expect(h.Upload(HeaderFor(h.session, *lpc, mt, good.size() + 3), good),
         grpc::StatusCode::INVALID_ARGUMENT, "truncated");
  // a round that has not started
  auto future = HeaderFor(h.session, *lpc, mt, good.size());
  future.set_round(lpc->round() + 5);
  expect(h.Upload(future, good), grpc::StatusCode::INVALID_ARGUMENT,
         "not started");
  // an unknown session
  auto stranger = HeaderFor("nobody", *lpc, mt, good.size());
  expect(h.Upload(stranger, good), grpc::StatusCode::UNAUTHENTICATED, "session");

  // Every pair, the one the bad uploads named included (none of them was
  // taken for it), now sends zeros: the round completes, is aggregated, and
  // no model may have moved.
  CHECK(h.UploadZeros(tasks) == 9);
  auto next = h.NextTasks();
  REQUIRE(next.size() == 5u);
  // The round's line follows its evaluation, which runs beside the next
  // round: wait for it.
  const std::string lines_path = h.dir / "out/rounds.jsonl";
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadJsonl(lines_path).size() >= 1; }, 60));
  auto rounds = testing::ReadJsonl(lines_path);
  REQUIRE(rounds.size() == 1u);
  // Nine refused; the headerless stream and the unknown session named no
  // session of their caller's, so they are on /metrics only.
  CHECK(rounds[0]["updates_rejected"] == 7);
  CHECK(rounds[0]["updates_accepted"] == 9);
  CHECK(rounds[0]["updates_late"] == 0);
  for (int m = 0; m < 3; ++m) {
    INFO("model " << m << " after round 1");
    CHECK(h.Weights(m) == before[m]);
  }

  // Round 2: an HPC's update of the same model X as round 1's LPC task,
  // with large values, is accepted and its duplicate refused; round 1's
  // update of X, now late and louder still, is refused as late and must
  // never reach X.
  const uint64_t x = mt.model_id();
  const v1::Task* hpc = FindTask(next, 3);
  REQUIRE(hpc);
  const v1::ModelTask* mx = FindModel(*hpc, x);
  REQUIRE(mx);
  SparseDelta accepted = Delta(d, mx->k());
  for (size_t i = 0; i < accepted.nnz(); ++i) accepted.values[i] = 0.25f + 0.01f * (i % 5);
  auto good2 = *EncodeSparseDelta(accepted, ValueType::kFp32);
  CHECK(h.Upload(HeaderFor(h.session, *hpc, *mx, good2.size()), good2).ok());
  expect(h.Upload(HeaderFor(h.session, *hpc, *mx, good2.size()), good2),
         grpc::StatusCode::ALREADY_EXISTS, "duplicate");
  SparseDelta loud = Delta(d, k);
  for (float& v : loud.values) v = 4.0f;
  auto late = *EncodeSparseDelta(loud, ValueType::kFp32);
  expect(h.Upload(HeaderFor(h.session, *lpc, mt, late.size()), late),
         grpc::StatusCode::FAILED_PRECONDITION, "late");
  // The rest of round 2 sends zeros, so it completes now.
  CHECK(h.UploadZeros(next, {{hpc->client_id(), static_cast<int64_t>(x)}}) == 8);
  REQUIRE(h.NextTasks().size() == 5u);
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadJsonl(lines_path).size() >= 2; }, 60));
  rounds = testing::ReadJsonl(lines_path);
  REQUIRE(rounds.size() == 2u);
  CHECK(rounds[1]["updates_accepted"] == 9);
  CHECK(rounds[1]["updates_rejected"] == 1);
  CHECK(rounds[1]["updates_late"] == 1);
  // X moved by the workload-aware aggregate of what round 2 accepted for
  // it: the HPC's update and the zeros of the others assigned X.
  std::vector<SentUpdate> for_x;
  for (const auto& t : next) {
    const v1::ModelTask* m = FindModel(t, x);
    if (!m) continue;
    SentUpdate u{h.IsHpc(t.client_id()), Delta(d, m->k())};
    if (&t == hpc) u.delta = accepted;
    else for (float& v : u.delta.values) v = 0;
    for_x.push_back(u);
  }
  const std::vector<float> expected_x = WorkloadAware(before[x], for_x);
  CHECK(CountMismatches(h.Weights(x), expected_x) == 0);
  CHECK(h.Weights(x) != before[x]);
  for (int m = 0; m < 3; ++m) {
    INFO("model " << m << " after round 2");
    if (m != static_cast<int>(x)) CHECK(h.Weights(m) == before[m]);
  }
}

TEST_CASE("an upload's payload bytes are the codec's prediction plus framing") {
  Harness h("round_deadline_s: 30\n");
  auto tasks = h.NextTasks();
  REQUIRE(tasks.size() == 5u);
  const uint64_t d = h.dim();
  for (const auto& t : tasks) {
    for (const auto& mt : t.models()) {
      // A dense-ish and a sparse delta, so both index formats are used.
      const uint64_t k = t.client_id() % 2 ? mt.k() : std::max<uint64_t>(1, mt.k() / 50);
      SparseDelta delta = Delta(d, k);
      auto blob = *EncodeSparseDelta(delta, ValueType::kFp32);
      REQUIRE(blob.size() == PredictEncodedSize(d, delta.indices, ValueType::kFp32));
      auto header = HeaderFor(h.session, t, mt, blob.size());
      REQUIRE(h.Upload(header, blob).ok());
    }
  }
  h.NextTasks();  // the round closed
  for (const auto& t : tasks) {
    uint64_t expected = 0;
    for (const auto& mt : t.models()) {
      const uint64_t k = t.client_id() % 2 ? mt.k() : std::max<uint64_t>(1, mt.k() / 50);
      SparseDelta delta = Delta(d, k);
      const uint64_t size = PredictEncodedSize(d, delta.indices, ValueType::kFp32);
      expected += size + UploadFramingBytes(HeaderFor(h.session, t, mt, size), size);
    }
    const auto books = h.coordinator->state().ledger.ByClient(t.round());
    INFO("client " << t.client_id());
    CHECK(books.at(t.client_id()).payload_up == expected);
  }
}

}  // namespace
}  // namespace shefl
