// Server-side stream deadlines (server/rpc/stream_watchdog.h): an upload that
// sends its header and then nothing is cancelled by the coordinator 5 s
// after its round's deadline instead of holding a server thread for ever;
// it is refused as "timeout", and the run goes on. (Downloads are watched
// the same way; a test model fits in the stream's flow-control window, so
// an unread download does not block the server here.)
#include "tests/coordinator_harness.h"  // first: see its comment

#include <chrono>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

constexpr double kDeadlineS = 2;

int TimeoutRefusals(const std::string& rounds_jsonl) {
  int n = 0;
  for (const auto& line : testing::ReadJsonl(rounds_jsonl))
    if (line["refusals"].contains("timeout"))
      n += line["refusals"]["timeout"].get<int>();
  return n;
}

TEST_CASE("a stalled upload is cancelled 5 s after its round's deadline") {
  Harness h("round_deadline_s: " + std::to_string(kDeadlineS) + "\nrounds: 50\n");
  auto tasks = h.NextTasks();
  REQUIRE(tasks.size() == 5u);
  const v1::Task& task = tasks[0];
  const v1::ModelTask& mt = task.models(0);
  const auto opened = std::chrono::steady_clock::now();

  // The upload: a header declaring 1000 bytes, then silence.
  grpc::ClientContext up_ctx;
  up_ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::UploadReply reply;
  auto upload = h.stub->UploadDelta(&up_ctx, &reply);
  v1::DeltaChunk first;
  *first.mutable_header() = HeaderFor(h.session, task, mt, 1000);
  first.set_data(std::string(10, '\0'));
  REQUIRE(upload->Write(first));
  const grpc::Status up = upload->Finish();  // returns when the server ends it
  const double up_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count();
  INFO("upload ended after " << up_s << " s: " << up.error_message());
  CHECK(up.error_code() == grpc::StatusCode::CANCELLED);
  CHECK(up_s >= kDeadlineS + 5 - 1);  // not before deadline + grace
  CHECK(up_s < kDeadlineS + 5 + 10);  // and not at the client's 60 s

  // Refused as a timeout, counted in a round's line; the run goes on.
  const bool counted = testing::WaitUntil(
      [&] { return TimeoutRefusals(h.dir / "out/rounds.jsonl") == 1; }, 30);
  for (const auto& line : testing::ReadJsonl(h.dir / "out/rounds.jsonl"))
    UNSCOPED_INFO("round " << line["round"] << " refusals " << line["refusals"]);
  CHECK(counted);
  CHECK(h.coordinator->state().current_round() >= 2);
}

}  // namespace
}  // namespace shefl
