// A flood of peers that connect and say nothing, against a real
// coordinator on 127.0.0.1 with a token: 1,000 UploadDelta streams that
// carry the right token and never send a chunk, over 50 connections, and
// 2,000 TCP connections that never speak. The legitimate daemons started
// beside them register at once, and the run ends with the models of a run
// without the flood. (UploadDelta is on gRPC's callback API: a waiting
// stream holds no thread; before, 640 such streams used up the 512 handler
// threads and Register failed with "Server Threadpool Exhausted".)
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
using Clock = std::chrono::steady_clock;

constexpr char kToken[] = "flood-test-token-0123456789abcdef";

// 1,000 silent streams over 50 connections of their own (a local
// subchannel pool each), and 2,000 bare TCP connections.
struct Flood {
  std::vector<std::unique_ptr<v1::Coordinator::Stub>> stubs;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<v1::UploadReply>> replies;
  std::vector<std::unique_ptr<grpc::ClientWriter<v1::DeltaChunk>>> streams;
  std::vector<int> sockets;

  explicit Flood(int port) {
    const std::string target = "127.0.0.1:" + std::to_string(port);
    for (int c = 0; c < 50; ++c) {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
      auto channel = grpc::CreateCustomChannel(
          target, grpc::InsecureChannelCredentials(), args);
      stubs.push_back(v1::Coordinator::NewStub(channel));
      for (int s = 0; s < 20; ++s) {
        contexts.push_back(std::make_unique<grpc::ClientContext>());
        contexts.back()->AddMetadata(kTokenMetadata, kToken);
        replies.push_back(std::make_unique<v1::UploadReply>());
        streams.push_back(
            stubs.back()->UploadDelta(contexts.back().get(), replies.back().get()));
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < 2000; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      REQUIRE(fd >= 0);
      REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
      sockets.push_back(fd);
    }
  }
  ~Flood() {
    for (int fd : sockets) ::close(fd);
    for (auto& c : contexts) c->TryCancel();
    streams.clear();
  }
};

struct RunOutcome {
  std::string sha;
  double register_seconds = 0;  // the slower daemon's, from its start
  // The coordinator's, once both daemons registered.
  int threads = 0, descriptors = 0;
  int64_t rss_kib = 0;
};

// Threads and resident KiB from /proc/PID/status, descriptors from fd/.
void Sample(int pid, RunOutcome* out) {
  const std::string proc = "/proc/" + std::to_string(pid);
  const std::string status = ReadFile(proc + "/status");
  for (const char* key : {"Threads:", "VmRSS:"}) {
    const size_t at = status.find(key);
    if (at == std::string::npos) continue;
    const long v = std::strtol(status.c_str() + at + std::strlen(key), nullptr, 10);
    if (key[0] == 'T') out->threads = static_cast<int>(v);
    else out->rss_kib = v;
  }
  for (const auto& e : std::filesystem::directory_iterator(proc + "/fd")) {
    (void)e;
    ++out->descriptors;
  }
}

RunOutcome Run(bool flood) {
  TempDir dir;
  WriteFile(dir / "c.yaml", SyntheticConfig());
  WriteFile(dir / "tok", kToken);
  const int port = FreePort();
  const int c = Spawn({BinDir() + "/shefl-coordinator", "--config",
                       dir / "c.yaml", "--listen",
                       "127.0.0.1:" + std::to_string(port), "--out",
                       dir / "run", "--threads", "1", "--insecure",
                       "--token-file", dir / "tok", "--set",
                       "clients.min_connected=8"},
                      dir / "c.log");
  REQUIRE(WaitUntil([&] {
    return ReadFile(dir / "c.log").find("listening on port") != std::string::npos;
  }, 60));
  std::unique_ptr<Flood> f;
  if (flood) f = std::make_unique<Flood>(port);
  const auto start = Clock::now();
  std::vector<int> daemons;
  for (int i = 0; i < 2; ++i)
    daemons.push_back(Spawn(
        {BinDir() + "/shefl-client", "--coordinator",
         "127.0.0.1:" + std::to_string(port), "--clients",
         i == 0 ? "0-3" : "4-7", "--name", "d" + std::to_string(i), "--out",
         dir / "run/daemons", "--threads", "1", "--insecure", "--token-file",
         dir / "tok"},
        dir / ("d" + std::to_string(i) + ".log")));
  RunOutcome out;
  REQUIRE(WaitUntil([&] {
    return Occurrences(ReadFile(dir / "c.log"), "registered daemon") == 2;
  }, 60));
  out.register_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  Sample(c, &out);
  const int rc = WaitFor(c, 300);
  for (int pid : daemons) WaitFor(pid, 30);
  f.reset();
  INFO(ReadFile(dir / "c.log"));
  REQUIRE(rc == 0);
  const auto summary = nlohmann::json::parse(ReadFile(dir / "run/summary.json"));
  out.sha = summary["model_sha256"].dump();
  return out;
}

TEST_CASE("silent streams and idle connections do not keep daemons out",
          "[flood]") {
  RaiseFileLimit();
  const RunOutcome clean = Run(false);
  const RunOutcome flooded = Run(true);
  WARN("registration under the flood: " << flooded.register_seconds
       << " s (clean " << clean.register_seconds << " s); coordinator then: "
       << flooded.threads << " threads (clean " << clean.threads << "), "
       << flooded.descriptors << " descriptors (clean " << clean.descriptors
       << "), " << flooded.rss_kib / 1024 << " MiB resident (clean "
       << clean.rss_kib / 1024 << ")");
  CHECK(flooded.register_seconds < 10);
  CHECK(flooded.sha == clean.sha);
}

}  // namespace
}  // namespace shefl
