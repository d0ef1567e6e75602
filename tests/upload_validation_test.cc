// A real coordinator on 127.0.0.1, and the test as its only daemon, talking
// gRPC over the socket: exact upload framing, every kind of bad upload
// refused with a reason, counted, and kept away from the global models, and
// a round closed by its deadline with part of its updates.
#include "tests/coordinator_harness.h"  // first: see its comment

#include <catch2/catch.hpp>

#include <thread>

#include "common/varint.h"

namespace shefl {
namespace {

void AppendVarint(std::string* out, uint64_t v) {
  uint8_t buf[10];
  const uint8_t* end = PutVarint(buf, v);
  out->append(reinterpret_cast<const char*>(buf), end - buf);
}

const v1::ModelTask* FindModel(const v1::Task& t, uint64_t model_id) {
  for (const auto& mt : t.models())
    if (mt.model_id() == model_id) return &mt;
  return nullptr;
}

TEST_CASE("bad uploads are refused with a reason, counted, and never touch a model") {
  // Nothing is accepted in round 1, so it ends at the deadline: generous, so
  // that a loaded machine still sends every bad upload inside it.
  Harness h("round_deadline_s: 20\n");
  auto tasks = h.NextTasks();
  REQUIRE(tasks.size() == 5u);
  const v1::Task* lpc = FindTask(tasks, 1);
  REQUIRE(lpc);
  const v1::ModelTask& mt = lpc->models(0);
  const uint64_t d = h.dim(), k = mt.k();
  const auto digests = h.coordinator->state().store->Digests();
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
  oor.append(4, '\0');
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

  // Nothing was accepted, so the round ends at its deadline with the
  // models as they were.
  auto next = h.NextTasks();
  REQUIRE(next.size() == 5u);
  CHECK(h.coordinator->state().store->Digests() == digests);
  auto rounds = testing::ReadJsonl(h.dir / "out/rounds.jsonl");
  REQUIRE(rounds.size() == 1u);
  CHECK(rounds[0]["updates_rejected"] == 9);
  CHECK(rounds[0]["updates_accepted"] == 0);

  // Round 2: an HPC's update of the same model X as round 1's LPC task is
  // accepted and its duplicate refused; round 1's update of X, now late and
  // with large values, is counted late and must never reach X.
  const uint64_t x = mt.model_id();
  const v1::Task* hpc = FindTask(next, 3);
  REQUIRE(hpc);
  const v1::ModelTask* mx = FindModel(*hpc, x);
  REQUIRE(mx);
  const std::vector<float> before = *h.coordinator->state().store->Get(x);
  const SparseDelta accepted = Delta(d, mx->k());
  auto good2 = *EncodeSparseDelta(accepted, ValueType::kFp32);
  CHECK(h.Upload(HeaderFor(h.session, *hpc, *mx, good2.size()), good2).ok());
  expect(h.Upload(HeaderFor(h.session, *hpc, *mx, good2.size()), good2),
         grpc::StatusCode::ALREADY_EXISTS, "duplicate");
  SparseDelta loud = Delta(d, k);
  for (float& v : loud.values) v = 0.5f;
  auto late = *EncodeSparseDelta(loud, ValueType::kFp32);
  expect(h.Upload(HeaderFor(h.session, *lpc, mt, late.size()), late),
         grpc::StatusCode::FAILED_PRECONDITION, "late");
  h.NextTasks();
  rounds = testing::ReadJsonl(h.dir / "out/rounds.jsonl");
  REQUIRE(rounds.size() == 2u);
  CHECK(rounds[1]["updates_accepted"] == 1);
  CHECK(rounds[1]["updates_rejected"] == 1);
  CHECK(rounds[1]["updates_late"] == 1);
  // X moved by exactly the accepted update (one HPC update alone: beta = 1,
  // weight 1), and no other model moved.
  std::vector<float> expected = before;
  for (size_t i = 0; i < accepted.nnz(); ++i)
    expected[accepted.indices[i]] += accepted.values[i];
  const std::vector<float> after_x = *h.coordinator->state().store->Get(x);
  REQUIRE(after_x.size() == expected.size());
  size_t differ = 0;
  for (size_t j = 0; j < expected.size(); ++j) differ += after_x[j] != expected[j];
  CHECK(differ == 0u);
  auto after = h.coordinator->state().store->Digests();
  for (size_t m = 0; m < after.size(); ++m)
    if (m != x) CHECK(after[m] == digests[m]);
  CHECK(after[x] != digests[x]);
}

TEST_CASE("a deadline closes a round with what arrived, late updates never applied") {
  Harness h("round_deadline_s: 10\n");
  auto tasks = h.NextTasks();
  REQUIRE(tasks.size() == 5u);
  const uint64_t d = h.dim();
  const auto digests = h.coordinator->state().store->Digests();
  std::vector<std::vector<float>> before;
  for (int m = 0; m < 3; ++m) before.push_back(*h.coordinator->state().store->Get(m));
  // Of 2 HPCs (3 models each) and 3 LPCs only the first HPC uploads.
  std::vector<const v1::Task*> hpcs;
  for (const auto& t : tasks)
    if (t.models_size() == 3) hpcs.push_back(&t);
  REQUIRE(hpcs.size() == 2u);
  std::vector<SparseDelta> sent(3);
  for (const auto& mt : hpcs[0]->models()) {
    SparseDelta delta = Delta(d, mt.k());
    for (float& v : delta.values) v += 0.01f * (mt.model_id() + 1);
    auto blob = *EncodeSparseDelta(delta, ValueType::kFp32);
    REQUIRE(h.Upload(HeaderFor(h.session, *hpcs[0], mt, blob.size()), blob).ok());
    sent[mt.model_id()] = delta;
  }
  auto next = h.NextTasks();  // the deadline closed round 1
  REQUIRE(next.size() == 5u);
  auto rounds = testing::ReadJsonl(h.dir / "out/rounds.jsonl");
  REQUIRE(rounds.size() == 1u);
  CHECK(rounds[0]["updates_expected"] == 2 * 3 + 3);
  CHECK(rounds[0]["updates_accepted"] == 3);
  CHECK(rounds[0]["completed"] == std::vector<int64_t>{hpcs[0]->client_id()});
  // Every model moved by exactly the one HPC update that arrived.
  auto check_models = [&](const char* when) {
    for (int m = 0; m < 3; ++m) {
      INFO(when << ", model " << m);
      std::vector<float> expected = before[m];
      for (size_t i = 0; i < sent[m].nnz(); ++i)
        expected[sent[m].indices[i]] += sent[m].values[i];
      CHECK(*h.coordinator->state().store->Get(m) == expected);
    }
  };
  check_models("after round 1");

  // The missing HPC and an LPC upload now, for round 1: late, refused,
  // counted in the round during which they arrive, never applied.
  int late_sent = 0;
  for (const v1::Task* t : {hpcs[1], FindTask(tasks, 1)}) {
    REQUIRE(t);
    for (const auto& mt : t->models()) {
      SparseDelta loud = Delta(d, mt.k());
      for (float& v : loud.values) v = 0.5f;
      auto blob = *EncodeSparseDelta(loud, ValueType::kFp32);
      auto st = h.Upload(HeaderFor(h.session, *t, mt, blob.size()), blob);
      INFO(st.error_message());
      CHECK(st.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
      ++late_sent;
    }
  }
  CHECK(late_sent == 4);
  h.NextTasks();  // round 2 closes at its deadline with nothing in
  rounds = testing::ReadJsonl(h.dir / "out/rounds.jsonl");
  REQUIRE(rounds.size() == 2u);
  CHECK(rounds[1]["updates_late"] == 4);
  CHECK(rounds[1]["updates_accepted"] == 0);
  check_models("after round 2");
  CHECK(h.coordinator->state().store->Digests() != digests);
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
