// MetricsServer over real sockets on 127.0.0.1: what it answers, and that
// slow, idle or oversize peers neither delay a scrape nor hold the server
// (or its destructor) past its deadlines: 5 s to send a request head,
// 8 KiB of head at most. Bounds are generous for a loaded 2-core machine
// yet far below what a server that handles one peer at a time needs.
#include "common/net/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "tests/test_support.h"

#include <catch2/catch.hpp>

namespace shefl {
namespace {

using Clock = std::chrono::steady_clock;

constexpr double kHeadDeadlineS = 5;  // the server's, from accept
constexpr double kMarginS = 3;        // for a loaded machine

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int Connect(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  return fd;
}

void SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n =
        ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the server may close early; the caller checks
    sent += static_cast<size_t>(n);
  }
}

// Reads until the server closes (EOF or reset) or `timeout_s` passes.
// True when it closed; `out` gets what arrived.
bool ReadToClose(int fd, double timeout_s, std::string* out = nullptr) {
  const Clock::time_point start = Clock::now();
  char buf[4096];
  for (;;) {
    const double left = timeout_s - SecondsSince(start);
    pollfd p{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0)
      return false;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return true;
    if (out) out->append(buf, static_cast<size_t>(n));
  }
}

struct Answer {
  bool complete = false;  // the server replied and closed in time
  std::string raw;        // status line, headers and body
  double seconds = 0;     // from connect to close
  int status() const {
    return raw.rfind("HTTP/1.0 ", 0) == 0 ? std::atoi(raw.c_str() + 9) : 0;
  }
  std::string body() const {
    const size_t at = raw.find("\r\n\r\n");
    return at == std::string::npos ? "" : raw.substr(at + 4);
  }
};

// Sends `request` as one write and reads the reply, giving up after
// `timeout_s` so that a server that hangs fails the test instead of hanging.
Answer Ask(int port, const std::string& request, double timeout_s = 3) {
  Answer a;
  const Clock::time_point start = Clock::now();
  const int fd = Connect(port);
  SendAll(fd, request);
  a.complete = ReadToClose(fd, timeout_s, &a.raw);
  a.seconds = SecondsSince(start);
  ::close(fd);
  return a;
}

Answer Get(int port, const std::string& path) {
  return Ask(port, "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

struct Served {
  std::shared_ptr<prometheus::Registry> registry =
      std::make_shared<prometheus::Registry>();
  std::unique_ptr<MetricsServer> server;

  Served() {
    prometheus::BuildCounter()
        .Name("shefl_test_events_total")
        .Help("events")
        .Register(*registry)
        .Add({})
        .Increment(7);
    auto s = MetricsServer::Start("127.0.0.1:0", registry);
    REQUIRE(s.ok());
    server = std::move(*s);
    REQUIRE(server != nullptr);
    REQUIRE(server->port() > 0);
  }
  int port() const { return server->port(); }
};

// A peer that sends a request head one byte every 0.5 s and never ends it
// (the slow-loris attack), until the server closes it or it is destroyed.
class SlowLoris {
 public:
  explicit SlowLoris(int port)
      : fd_(Connect(port)), start_(Clock::now()), thread_([this] { Run(); }) {}
  ~SlowLoris() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int bytes_sent() const { return sent_; }
  // Seconds from connect until the server closed it; < 0 while open.
  double closed_after() const { return closed_after_; }

 private:
  void Run() {
    const std::string head = "GET /metrics HTTP/1.0\r\nX-Slow: ";
    for (size_t i = 0; !stop_; ++i) {
      const char byte = i < head.size() ? head[i] : 'a';
      if (::send(fd_, &byte, 1, MSG_NOSIGNAL) != 1) break;
      ++sent_;
      // Anything readable (EOF, reset, a reply) means the server let go.
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 500) > 0) break;
    }
    if (!stop_) closed_after_ = SecondsSince(start_);
  }

  const int fd_;
  const Clock::time_point start_;
  std::atomic<bool> stop_{false};
  std::atomic<int> sent_{0};
  std::atomic<double> closed_after_{-1};
  std::thread thread_;  // last: it starts once the rest is set
};

TEST_CASE("GET /metrics answers 200 with the registry in the text format") {
  Served s;
  const Answer a = Get(s.port(), "/metrics");
  REQUIRE(a.complete);
  CHECK(a.status() == 200);
  CHECK(a.raw.find("Content-Type: text/plain; version=0.0.4") !=
        std::string::npos);
  const auto series = testing::ParseMetrics(a.body());
  REQUIRE(series.count("shefl_test_events_total") == 1);
  CHECK(series.at("shefl_test_events_total") == 7);
  CHECK(Get(s.port(), "/metrics?x=1").status() == 200);
  // A hand-typed head (bare newlines) is served too.
  CHECK(Ask(s.port(), "GET /metrics HTTP/1.0\n\n").status() == 200);
}

TEST_CASE("other paths are 404 and other methods 405 and a bad line 400") {
  Served s;
  CHECK(Get(s.port(), "/other").status() == 404);
  CHECK(Get(s.port(), "/metrics/").status() == 404);
  CHECK(Ask(s.port(), "POST /metrics HTTP/1.0\r\n\r\n").status() == 405);
  CHECK(Ask(s.port(), "GET /metrics\r\n\r\n").status() == 400);
  CHECK(Ask(s.port(), "hello\r\n\r\n").status() == 400);
  CHECK(Ask(s.port(), "GET metrics HTTP/1.0\r\n\r\n").status() == 400);
}

TEST_CASE("SetHandler serves text at a path and 503 when its body fails") {
  Served s;
  std::atomic<bool> healthy{true};
  s.server->SetHandler("/healthz", [&]() -> absl::StatusOr<std::string> {
    if (!healthy) return absl::UnavailableError("coordinator lost");
    return std::string("ok\n");
  });
  Answer a = Get(s.port(), "/healthz");
  CHECK(a.status() == 200);
  CHECK(a.body() == "ok\n");
  CHECK(a.raw.find("Content-Type: text/plain; charset=utf-8") !=
        std::string::npos);
  healthy = false;
  a = Get(s.port(), "/healthz");
  CHECK(a.status() == 503);
  CHECK(a.body() == "coordinator lost\n");
  // A lambda returning a plain string fits too; an empty body removes.
  s.server->SetHandler("/version", [] { return std::string("1\n"); });
  CHECK(Get(s.port(), "/version").body() == "1\n");
  s.server->SetHandler("/version", nullptr);
  CHECK(Get(s.port(), "/version").status() == 404);
  CHECK(Get(s.port(), "/metrics").status() == 200);
}

TEST_CASE("SetHandler may run while the server answers the same path") {
  Served s;
  std::atomic<bool> stop{false};
  std::thread flip([&] {
    for (int i = 0; !stop; ++i)
      s.server->SetHandler("/healthz", i % 2 == 0
                                           ? MetricsServer::Body(nullptr)
                                           : [] { return std::string("ok"); });
  });
  for (int i = 0; i < 50; ++i) {
    const int status = Get(s.port(), "/healthz").status();
    CHECK((status == 200 || status == 404));
  }
  stop = true;
  flip.join();
}

TEST_CASE("Start refuses a bad address and a port in use and serves nothing for an empty one") {
  auto registry = std::make_shared<prometheus::Registry>();
  auto none = MetricsServer::Start("", registry);
  REQUIRE(none.ok());
  CHECK(*none == nullptr);
  CHECK(absl::IsInvalidArgument(
      MetricsServer::Start("nohost:1", registry).status()));
  CHECK(absl::IsInvalidArgument(
      MetricsServer::Start("127.0.0.1:70000", registry).status()));
  auto first = MetricsServer::Start("127.0.0.1:0", registry);
  REQUIRE(first.ok());
  const std::string taken = "127.0.0.1:" + std::to_string((*first)->port());
  const auto second = MetricsServer::Start(taken, registry);
  REQUIRE_FALSE(second.ok());
  CHECK(absl::StrContains(second.status().message(), taken));
}

TEST_CASE("a slow-loris peer delays no scrape and is closed at the head deadline") {
  Served s;
  SlowLoris loris(s.port());
  // Its head has started arriving before the first scrape.
  REQUIRE(testing::WaitUntil([&] { return loris.bytes_sent() >= 2; }, 5));
  std::vector<double> seconds;
  for (int i = 0; i < 20; ++i) {
    const Answer a = Get(s.port(), "/metrics");
    INFO("scrape " << i << " took " << a.seconds << " s");
    REQUIRE(a.complete);
    CHECK(a.status() == 200);
    CHECK(a.seconds < 1.0);
    seconds.push_back(a.seconds);
  }
  CHECK(loris.closed_after() < 0);  // all 20 ran while it held on
  std::sort(seconds.begin(), seconds.end());
  WARN("median scrape beside a slow loris: "
       << (seconds[9] + seconds[10]) / 2 * 1000 << " ms");
  // A byte every 0.5 s never lets a per-read timeout expire; the total
  // deadline does.
  REQUIRE(testing::WaitUntil([&] { return loris.closed_after() >= 0; },
                             kHeadDeadlineS + kMarginS));
  CHECK(loris.closed_after() > kHeadDeadlineS - 0.5);
  CHECK(Get(s.port(), "/metrics").status() == 200);
}

TEST_CASE("100 idle peers delay no scrape and are closed by the head deadline") {
  Served s;
  const Clock::time_point opened = Clock::now();
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) idle.push_back(Connect(s.port()));
  // More than the server keeps open (64): the oldest idle ones make room.
  const Answer a = Get(s.port(), "/metrics");
  INFO("the scrape took " << a.seconds << " s");
  REQUIRE(a.complete);
  CHECK(a.status() == 200);
  CHECK(a.seconds < 1.0);
  const double limit = kHeadDeadlineS + kMarginS;
  int closed = 0;
  for (int fd : idle) {
    closed += ReadToClose(fd, std::max(0.0, limit - SecondsSince(opened)));
    ::close(fd);
  }
  CHECK(closed == 100);
  CHECK(Get(s.port(), "/metrics").status() == 200);
}

TEST_CASE("a peer that takes no reply delays no scrape and is reset at the write deadline") {
  Served s;
  // Far more than the socket buffers on both sides hold.
  const std::string big(16 << 20, 'x');
  s.server->SetHandler("/big", [&] { return big; });
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int small = 4096;
  ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(s.port()));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  const Clock::time_point asked = Clock::now();
  SendAll(fd, "GET /big HTTP/1.0\r\n\r\n");
  const Answer scrape = Get(s.port(), "/metrics");
  CHECK(scrape.status() == 200);
  CHECK(scrape.seconds < 1.0);
  // Unread data keeps POLLIN set; the reset shows as an error or hang-up.
  const auto reset = [fd] {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLERR | POLLHUP)) != 0;
  };
  REQUIRE(testing::WaitUntil(reset, kHeadDeadlineS + kMarginS));
  CHECK(SecondsSince(asked) > kHeadDeadlineS - 0.5);
  ::close(fd);
}

TEST_CASE("an oversize request head is refused at once and serving goes on") {
  Served s;
  const std::string pad(9000, 'a');
  // Unterminated: refused as soon as 8 KiB are in, not at the deadline.
  for (const std::string& request :
       {"GET /metrics HTTP/1.0\r\nX-Pad: " + pad,
        "GET /metrics HTTP/1.0\r\nX-Pad: " + pad + "\r\n\r\n"}) {
    const Answer a = Ask(s.port(), request);
    INFO("answer: " << a.raw.substr(0, 40));
    CHECK(a.complete);
    CHECK(a.seconds < 2.0);
    // A reset may beat the 431 to the peer: closed is refused too.
    CHECK((a.status() == 431 || a.raw.empty()));
  }
  CHECK(Get(s.port(), "/metrics").status() == 200);
}

TEST_CASE("the destructor returns within 2 s with slow and idle peers connected") {
  Served s;
  auto loris = std::make_unique<SlowLoris>(s.port());
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(Connect(s.port()));
  const int partial = Connect(s.port());
  SendAll(partial, "GET /metrics HTTP/1.0\r\n");
  REQUIRE(testing::WaitUntil([&] { return loris->bytes_sent() >= 2; }, 5));
  const Clock::time_point start = Clock::now();
  auto gone = std::async(std::launch::async, [&] { s.server.reset(); });
  const bool in_time =
      gone.wait_for(std::chrono::seconds(2)) == std::future_status::ready;
  INFO("the destructor took " << SecondsSince(start) << " s");
  CHECK(in_time);
  if (!in_time) loris.reset();  // lets a server stuck on it finish
  gone.wait();
  // The peers see the server go: every connection is closed.
  for (int fd : idle) {
    CHECK(ReadToClose(fd, 2));
    ::close(fd);
  }
  CHECK(ReadToClose(partial, 2));
  ::close(partial);
  if (loris)
    CHECK(testing::WaitUntil([&] { return loris->closed_after() >= 0; }, 2));
}

}  // namespace
}  // namespace shefl
