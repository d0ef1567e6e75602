// The coordinator's caller checks (server/rpc/caller_checks.h), held without a
// gRPC server: identity, ownership, and a shared download's other clients.
#include "server/rpc/caller_checks.h"

#include <memory>

#include "server/state/round_state.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

// Sessions hold a feed queue (a mutex): made in place.
std::unique_ptr<DaemonSession> Session(const std::string& identity,
                                       std::vector<int64_t> clients) {
  auto s = std::make_unique<DaemonSession>();
  s->name = "lab-1";
  s->identity = identity;
  s->clients = std::move(clients);
  return s;
}

// Client 7 (an HPC) trains models 0 and 1 at version 0; client 8 model 1.
std::shared_ptr<RoundState> Round() {
  RoundPlan plan;
  plan.round = 1;
  plan.num_hpc = 1;
  plan.tasks.push_back(ClientTask{7, Tier::kHpc, {0, 1}, {2, 2}});
  plan.tasks.push_back(ClientTask{8, Tier::kLpc, {1}, {2}});
  return std::make_shared<RoundState>(
      1, plan, std::vector<uint64_t>{0, 0}, 4, AggregationConfig{}, 2,
      RoundState::Clock::now() + std::chrono::seconds(60));
}

TEST_CASE("a session is used only by the identity that registered it") {
  const auto s = Session("cert:lab-1;", {7, 8});
  CHECK(CheckCaller(s.get(), "cert:lab-1;").ok());
  const absl::Status other = CheckCaller(s.get(), "cert:lab-2;");
  CHECK(other.code() == absl::StatusCode::kPermissionDenied);
  CHECK(RefusalReason(other) == "not_owner");
  CHECK(CheckCaller(nullptr, "token").ok());  // CheckOwner refuses it
}

TEST_CASE("a session names only the clients it hosts") {
  const auto s = Session("token", {7, 8});
  CHECK(CheckOwner(s.get(), 7).ok());
  CHECK(CheckOwner(nullptr, 7).code() == absl::StatusCode::kUnauthenticated);
  const absl::Status st = CheckOwner(s.get(), 9);
  CHECK(st.code() == absl::StatusCode::kPermissionDenied);
  CHECK(std::string(st.message()) == "daemon 'lab-1' does not host client 9");
}

TEST_CASE("a shared download serves only the session's assigned clients, once each") {
  const std::shared_ptr<RoundState> round = Round();
  const RoundOfClient same = [&](int64_t) { return round; };
  const auto s = Session("token", {7, 8});
  v1::DownloadRequest req;
  req.set_client_id(7);
  req.set_model_id(1);
  req.set_model_version(0);
  req.add_also_for_clients(8);
  CHECK(CheckAlsoFor(s.get(), same, req).ok());
  req.add_also_for_clients(8);
  CHECK(std::string(CheckAlsoFor(s.get(), same, req).message()) ==
        "download: client 8 named twice");
  req.clear_also_for_clients();
  req.add_also_for_clients(9);
  CHECK(CheckAlsoFor(s.get(), same, req).code() ==
        absl::StatusCode::kPermissionDenied);
  // Client 8 is not assigned model 0.
  req.clear_also_for_clients();
  req.set_model_id(0);
  req.add_also_for_clients(8);
  CHECK_FALSE(CheckAlsoFor(s.get(), same, req).ok());
  // Buffered tickets: each client is checked in its own round, and one
  // without a task is refused.
  req.set_model_id(1);
  const RoundOfClient own = [&](int64_t c) {
    return c == 8 ? round : std::shared_ptr<RoundState>();
  };
  CHECK(CheckAlsoFor(s.get(), own, req).ok());
  req.set_client_id(8);
  req.clear_also_for_clients();
  req.add_also_for_clients(7);
  CHECK(std::string(CheckAlsoFor(s.get(), own, req).message()) ==
        "download: client 7 has no task");
}

}  // namespace
}  // namespace shefl
