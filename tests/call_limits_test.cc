// Bounds on the calls one host or one identity may hold open: the bound
// itself (server/rpc/call_limits.h), and a real coordinator whose host bound
// is lowered to 6: six silent upload streams from one host hold every
// slot, the seventh call is refused as `busy` at its start and counted on
// /metrics only, and once the streams go, the host gets in again.
#include "tests/coordinator_harness.h"

#include "server/rpc/call_limits.h"

#include <prometheus/registry.h>

#include "common/net/call_metadata.h"

namespace shefl {
namespace {

TEST_CASE("the host of a gRPC peer string drops only the port", "[limits]") {
  CHECK(CallLimits::HostOf("ipv4:10.0.0.5:41234") == "ipv4:10.0.0.5");
  CHECK(CallLimits::HostOf("ipv6:[::1]:5") == "ipv6:[::1]");
  CHECK(CallLimits::HostOf("ipv6:[fe80::1]") == "ipv6:[fe80::1]");
  CHECK(CallLimits::HostOf("unix:/run/shefl.sock") == "unix:/run/shefl.sock");
}

TEST_CASE("slots are bounded per host and per named identity and come back",
          "[limits]") {
  CallLimits limits(3, 2);
  std::vector<CallLimits::Slot> held;
  for (int port = 1; port <= 3; ++port) {
    auto s = limits.Enter("ipv4:10.0.0.1:" + std::to_string(port), "token");
    REQUIRE(s.ok());
    held.push_back(std::move(*s));
  }
  auto fourth = limits.Enter("ipv4:10.0.0.1:9", "token");
  REQUIRE_FALSE(fourth.ok());
  CHECK(fourth.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(RefusalReason(fourth.status()) == "busy");
  CHECK(fourth.status().message().find("ipv4:10.0.0.1") != std::string::npos);
  // Another host is not held back; one identity is, from any host.
  auto a = limits.Enter("ipv4:10.0.0.2:1", "cert:d0");
  auto b = limits.Enter("ipv4:10.0.0.3:1", "cert:d0");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  auto c = limits.Enter("ipv4:10.0.0.4:1", "cert:d0");
  REQUIRE_FALSE(c.ok());
  CHECK(c.status().message().find("cert:d0") != std::string::npos);
  CHECK(limits.Enter("ipv4:10.0.0.4:1", "cert:d1").ok());
  held.pop_back();
  CHECK(limits.OpenFromHost("ipv4:10.0.0.1:77") == 2);
  CHECK(limits.Enter("ipv4:10.0.0.1:9", "token").ok());
}

double BusyRefusals(CoordinatorState& s) {
  double n = 0;
  for (const auto& family : s.metrics.registry()->Collect()) {
    if (family.name != "shefl_refusals_total") continue;
    for (const auto& m : family.metric)
      for (const auto& l : m.label)
        if (l.name == "reason" && l.value == "busy") n += m.counter.value;
  }
  return n;
}

TEST_CASE("a host holding every slot is refused as busy until its calls end",
          "[limits]") {
  testing::TempDir dir;
  const std::string token(32, 't');
  testing::WriteFile(dir / "c.yaml", testing::SyntheticConfig());
  testing::WriteFile(dir / "tok", token + "\n");
  CoordinatorOptions o = PlainOptions(dir / "c.yaml", dir / "out", dir / "tok");
  o.max_calls_per_host = 6;
  RunningCoordinator c(o);
  auto stub = v1::Coordinator::NewStub(
      grpc::CreateChannel(c.target(), grpc::InsecureChannelCredentials()));

  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<v1::UploadReply>> replies;
  std::vector<std::unique_ptr<grpc::ClientWriter<v1::DeltaChunk>>> streams;
  auto open_upload = [&] {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    contexts.back()->AddMetadata(kTokenMetadata, token);
    replies.push_back(std::make_unique<v1::UploadReply>());
    streams.push_back(stub->UploadDelta(contexts.back().get(), replies.back().get()));
  };
  for (int i = 0; i < 6; ++i) open_upload();
  double busy_seen = 0;
  REQUIRE(testing::WaitUntil(
      [&] {
        // Heartbeats probe the bound; each refused one holds nothing.
        grpc::ClientContext ctx;
        ctx.AddMetadata(kTokenMetadata, token);
        v1::HeartbeatRequest req;
        v1::HeartbeatReply reply;
        if (stub->Heartbeat(&ctx, req, &reply).error_code() ==
            grpc::StatusCode::RESOURCE_EXHAUSTED)
          return true;
        // A probe that got in may have held a slot just as an upload
        // arrived, which was then refused as busy: open another in its place.
        const double busy = BusyRefusals(c.coordinator->state());
        if (busy > busy_seen) {
          busy_seen = busy;
          open_upload();
        }
        return false;
      },
      10));
  const grpc::Status refused = RegisterAs(*stub, "d0", token, 0, 7);
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(refused.error_message().find("calls already open from") !=
        std::string::npos);
  CHECK(c.coordinator->state().registry.Sessions().empty());
  CHECK(BusyRefusals(c.coordinator->state()) >= 2);

  for (auto& ctx : contexts) ctx->TryCancel();
  for (auto& s : streams) (void)s->Finish();
  REQUIRE(testing::WaitUntil(
      [&] { return RegisterAs(*stub, "d0", token, 0, 7).ok(); }, 10));
  CHECK(c.coordinator->state().registry.Sessions().size() == 1u);
}

}  // namespace
}  // namespace shefl
