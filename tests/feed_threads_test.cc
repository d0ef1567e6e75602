// TaskFeed is a callback reactor: a connected daemon's open feed costs the
// coordinator an object, not a thread, and tasks are pushed to it when the
// round opens (nothing polls). 1,000 daemons (one client each, their own
// tokens) register with a real shefl-coordinator on 127.0.0.1 and hold
// their feeds open from this process through gRPC's callback client; the
// coordinator's thread count (/proc/PID/status) is read before the feeds
// open and once all are open, and the round's tasks must reach the feeds
// of the clients it sampled.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "common/core/resources.h"
#include "common/net/call_metadata.h"
#include "shefl.grpc.pb.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using namespace testing;

constexpr int kDaemons = 1000;

std::string Token(int i) { return "feed-threads-token-" + std::to_string(i); }

int Threads(int pid) {
  const std::string status = ReadFile("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find("Threads:");
  REQUIRE(at != std::string::npos);
  return static_cast<int>(std::strtol(status.c_str() + at + 8, nullptr, 10));
}

// One daemon's feed, read until the call ends; counts the tasks it gets.
class Feed final : public grpc::ClientReadReactor<v1::FeedMessage> {
 public:
  Feed(v1::Coordinator::Stub* stub, const std::string& session, int client,
       const std::string& token, std::atomic<int>* tasks)
      : tasks_(tasks) {
    ctx_.AddMetadata(kTokenMetadata, token);
    ctx_.AddMetadata(kSessionMetadata, session);
    req_.set_session_id(session);
    v1::LogicalClient* c = req_.add_clients();
    c->set_client_id(static_cast<uint32_t>(client));
    c->set_num_samples(10);
    stub->async()->TaskFeed(&ctx_, &req_, this);
    StartRead(&msg_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (msg_.has_task()) ++*tasks_;
    StartRead(&msg_);
  }
  void OnDone(const grpc::Status&) override { done_ = true; }
  void Cancel() { ctx_.TryCancel(); }
  bool done() const { return done_; }

 private:
  grpc::ClientContext ctx_;
  v1::TaskFeedRequest req_;
  v1::FeedMessage msg_;
  std::atomic<int>* tasks_;
  std::atomic<bool> done_{false};
};

// The feeds, cancelled and waited for however the test ends: a client
// reactor must outlive its call.
struct Feeds {
  std::vector<std::unique_ptr<Feed>> all;
  void CancelAll() {
    for (auto& f : all) f->Cancel();
    WaitUntil([&] {
      for (auto& f : all)
        if (!f->done()) return false;
      return true;
    }, 30);
  }
  ~Feeds() { CancelAll(); }
};

TEST_CASE("1,000 open feeds hold a handful of the coordinator's threads",
          "[feed]") {
  RaiseFileLimit();
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  std::string tokens;
  for (int i = 0; i < kDaemons; ++i)
    tokens += "d" + std::to_string(i) + " " + Token(i) + "\n";
  WriteFile(dir / "tokens", tokens);
  const int port = FreePort();
  const int pid = Spawn(
      {BinDir() + "/shefl-coordinator", "--config", dir / "c.yaml", "--listen",
       "127.0.0.1:" + std::to_string(port), "--out", dir / "run", "--threads",
       "1", "--insecure", "--token-file", dir / "tokens", "--set",
       "clients.num_clients=1000", "--set", "clients.num_hpc=500", "--set",
       "data.synthetic_train=20000", "--set", "round_deadline_s=600"},
      dir / "c.log");
  struct Stop {  // however the test ends
    int pid;
    ~Stop() {
      if (pid > 0) ::kill(pid, SIGKILL), WaitFor(pid, 10);
    }
  } stop{pid};
  REQUIRE(WaitUntil([&] {
    return ReadFile(dir / "c.log").find("listening on port") != std::string::npos;
  }, 60));
  // A connection carries at most 32 streams (common/net/keepalive.h), as
  // a daemon's own does: 50 connections of 20 feeds.
  std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs;
  for (int c = 0; c < kDaemons / 20; ++c) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    stubs.push_back(v1::Coordinator::NewStub(grpc::CreateCustomChannel(
        "127.0.0.1:" + std::to_string(port),
        grpc::InsecureChannelCredentials(), args)));
  }
  v1::Coordinator::Stub* stub = stubs[0].get();
  std::vector<std::string> sessions;
  for (int i = 0; i < kDaemons; ++i) {
    grpc::ClientContext ctx;
    v1::RegisterRequest req;
    req.set_daemon_name("d" + std::to_string(i));
    req.set_token(Token(i));
    req.set_device("cpu");
    req.add_clients()->set_client_id(static_cast<uint32_t>(i));
    v1::RegisterReply reply;
    const grpc::Status st = stub->Register(&ctx, req, &reply);
    INFO("daemon " << i << ": " << st.error_message());
    REQUIRE(st.ok());
    sessions.push_back(reply.session_id());
  }
  const int before = Threads(pid);
  std::atomic<int> tasks{0};
  Feeds feeds;
  for (int i = 0; i < kDaemons; ++i)
    feeds.all.push_back(std::make_unique<Feed>(stubs[i / 20].get(),
                                               sessions[i], i, Token(i),
                                               &tasks));
  // Every client connected: the coordinator opens round 1 and pushes its
  // tasks (2 HPCs and 3 LPCs of the synthetic config) down their feeds.
  const bool pushed = WaitUntil([&] { return tasks.load() >= 5; }, 60);
  const std::string log = ReadFile(dir / "c.log");
  INFO(tasks.load() << " tasks; the coordinator's log:\n" << log);
  REQUIRE(pushed);
  // The round opened only once all 1,000 clients were connected.
  CHECK(log.find("round 1 open") != std::string::npos);
  const int after = Threads(pid);
  WARN("coordinator threads: " << before << " with 1,000 daemons registered, "
       << after << " with their 1,000 feeds open");
  CHECK(after - before <= 8);
  CHECK(ReadFile(dir / "c.log").find("feed closed") == std::string::npos);
  feeds.CancelAll();
  ::kill(pid, SIGTERM);
  CHECK(WaitFor(pid, 60) == 0);
  stop.pid = 0;
}

}  // namespace
}  // namespace shefl
