// A round closed by its deadline with only part of its updates in, seen
// from the test acting as the only daemon of a real coordinator over gRPC:
// the models move by the aggregate of exactly what arrived, rounds.jsonl
// says so, and the stragglers' updates that come after the close are
// refused as late, counted in the round during which they arrive, and
// never applied, in that round or later.
#include "tests/coordinator_harness.h"  // first: see its comment

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Long enough that a loaded machine still sends its three uploads inside
// it; the round waits all of it, so not longer.
constexpr double kDeadlineS = 12;

TEST_CASE("a deadline closes a round with what arrived, late updates never applied") {
  Harness h("round_deadline_s: " + std::to_string(kDeadlineS) + "\n");
  auto tasks = h.NextTasks();
  REQUIRE(tasks.size() == 5u);
  const uint64_t d = h.dim();
  std::vector<std::vector<float>> before;
  for (int m = 0; m < 3; ++m) before.push_back(h.Weights(m));
  // Of 2 HPCs (3 models each) and 3 LPCs (1 model each) only the first HPC
  // uploads, a different delta for each model.
  std::vector<const v1::Task*> hpcs;
  for (const auto& t : tasks)
    if (t.models_size() == 3) hpcs.push_back(&t);
  REQUIRE(hpcs.size() == 2u);
  REQUIRE(h.IsHpc(hpcs[0]->client_id()));
  std::vector<std::vector<SentUpdate>> sent(3);
  for (const auto& mt : hpcs[0]->models()) {
    SparseDelta delta = Delta(d, mt.k());
    for (float& v : delta.values) v += 0.01f * (mt.model_id() + 1);
    auto blob = *EncodeSparseDelta(delta, ValueType::kFp32);
    REQUIRE(h.Upload(HeaderFor(h.session, *hpcs[0], mt, blob.size()), blob).ok());
    sent[mt.model_id()].push_back({true, delta});
  }
  auto next = h.NextTasks();  // the deadline closed round 1
  REQUIRE(next.size() == 5u);
  // Round 1's line follows its evaluation, which runs beside round 2.
  const std::string lines_path = h.dir / "out/rounds.jsonl";
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadJsonl(lines_path).size() >= 1; }, 60));
  auto rounds = testing::ReadJsonl(lines_path);
  REQUIRE(rounds.size() == 1u);
  CHECK(rounds[0]["updates_expected"] == 2 * 3 + 3);
  CHECK(rounds[0]["updates_accepted"] == 3);
  CHECK(rounds[0]["updates_rejected"] == 0);
  CHECK(rounds[0]["updates_late"] == 0);
  CHECK(rounds[0]["completed"] == std::vector<int64_t>{hpcs[0]->client_id()});
  // Closed by the deadline, not by a complete set: it lasted the deadline.
  CHECK(rounds[0]["wall_seconds"].get<double>() >= kDeadlineS);

  // Every model moved by the aggregate of the one HPC update that arrived
  // for it (beta = 1: no LPC update; the missing ones count nothing).
  std::vector<std::vector<float>> after1;
  for (int m = 0; m < 3; ++m) {
    INFO("model " << m << " after round 1");
    after1.push_back(h.Weights(m));
    CHECK(CountMismatches(after1[m], WorkloadAware(before[m], sent[m])) == 0);
    CHECK(after1[m] != before[m]);
  }

  // The missing HPC and an LPC upload now, for round 1: late, refused,
  // counted in round 2 (during which they arrive), never applied.
  const v1::Task* lpc = FindTask(tasks, 1);
  REQUIRE(lpc);
  int late_sent = 0;
  for (const v1::Task* t : {hpcs[1], lpc}) {
    for (const auto& mt : t->models()) {
      SparseDelta loud = Delta(d, mt.k());
      for (float& v : loud.values) v = 4.0f;
      auto blob = *EncodeSparseDelta(loud, ValueType::kFp32);
      auto st = h.Upload(HeaderFor(h.session, *t, mt, blob.size()), blob);
      INFO("client " << t->client_id() << " model " << mt.model_id() << ": "
                     << st.error_message());
      CHECK(st.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
      CHECK_THAT(st.error_message(), Catch::Contains("late"));
      ++late_sent;
    }
  }
  CHECK(late_sent == 4);
  // Round 2 gets zeros from everyone, so it completes now, aggregated,
  // with no weight to move unless a late update got in.
  CHECK(h.UploadZeros(next) == 9);
  REQUIRE(h.NextTasks().size() == 5u);
  REQUIRE(testing::WaitUntil(
      [&] { return testing::ReadJsonl(lines_path).size() >= 2; }, 60));
  rounds = testing::ReadJsonl(lines_path);
  REQUIRE(rounds.size() == 2u);
  CHECK(rounds[1]["updates_late"] == 4);
  CHECK(rounds[1]["updates_accepted"] == 9);
  CHECK(rounds[1]["updates_rejected"] == 0);
  CHECK(rounds[1]["wall_seconds"].get<double>() < kDeadlineS);
  for (int m = 0; m < 3; ++m) {
    INFO("model " << m << " after round 2");
    CHECK(h.Weights(m) == after1[m]);
  }
}

}  // namespace
}  // namespace shefl
