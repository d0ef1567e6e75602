#include "common/net/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstring>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/core/mutex.h"
#include "common/core/status_macros.h"
#include "common/net/http_head.h"
#include "common/net/run_label.h"

namespace shefl {
namespace {

using Clock = std::chrono::steady_clock;

// Why each bound is what it is. A scraper (Prometheus, a probe, curl) sends
// its whole head, a few hundred bytes, as soon as it connects, and takes a
// reply of tens of KiB at once. A peer that does otherwise is broken or
// hostile, and must not hold a slot, a descriptor or memory for long.
//
// Accept to end of head: far above what a scraper needs on a loaded
// machine. A total, not a per-read, timeout: a peer sending a byte now and
// then would reset a per-read one forever (the slow-loris attack).
constexpr auto kHeadTimeout = std::chrono::seconds(5);
// A Prometheus scrape's head is about 300 bytes; 8 KiB is what common
// servers allow too (Apache's LimitRequestFieldSize 8190, nginx's 8k
// buffers), and with kMaxConnections keeps the buffers under 1 MiB.
constexpr size_t kMaxHeadBytes = 8192;
// Reply ready to last byte sent: a reply mostly fits in the socket's send
// buffer at once, so a peer that takes nothing for this long has gone.
constexpr auto kWriteTimeout = std::chrono::seconds(5);
// The process shares its descriptors (soft limit often 1024) with gRPC,
// and a deployment has a few scrapers and probes, not dozens.
constexpr size_t kMaxConnections = 64;
// Out of descriptors, the listening socket stays readable: wait this long
// before accepting again rather than spin.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

constexpr char kTextType[] = "text/plain; charset=utf-8";
constexpr char kMetricsType[] = "text/plain; version=0.0.4; charset=utf-8";

// One peer: its head as it arrives, then its reply as it leaves.
struct Conn {
  Conn(int socket, Clock::time_point head_deadline)
      : fd(socket), deadline(head_deadline) {}
  int fd;
  Clock::time_point deadline;  // kHeadTimeout, then kWriteTimeout
  std::string in;
  std::string out;  // the reply; empty while the head is incomplete
  size_t sent = 0;
  bool done = false;  // to close: replied, failed, or the peer left
};

// poll()'s timeout to wake at `t`: whole ms rounded up, so a deadline is
// never looked at just before it passes; -1 (none) for time_point::max().
int MillisUntil(Clock::time_point t) {
  if (t == Clock::time_point::max()) return -1;
  const int64_t ms =
      std::chrono::ceil<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT_MAX));
}

absl::StatusOr<sockaddr_in> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  const std::string host =
      colon == std::string::npos ? "" : listen.substr(0, colon);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  int port = -1;
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535 ||
      inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(),
                &addr.sin_addr) != 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-listen '", listen, "': expected IPv4-HOST:PORT"));
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

// Reads what the peer has sent, until the head is complete, over
// kMaxHeadBytes, or the socket has no more for now.
void ReadHead(Conn* c) {
  char buf[4096];
  while (c->in.size() <= kMaxHeadBytes &&
         HttpHeadEnd(c->in) == std::string::npos) {
    const ssize_t n = ::recv(c->fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // the peer left before its head was complete, or failed
      c->done = true;
      return;
    }
    c->in.append(buf, static_cast<size_t>(n));
  }
}

// Sends what the socket takes now; done once all is sent or it fails.
void SendSome(Conn* c) {
  while (c->sent < c->out.size()) {
    const ssize_t n = ::send(c->fd, c->out.data() + c->sent,
                             c->out.size() - c->sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) break;
    c->sent += static_cast<size_t>(n);
  }
  c->done = true;
}

// Moves `c` on as far as its socket allows; `reply` answers a whole head.
template <typename ReplyFn>
void Progress(Conn* c, const ReplyFn& reply) {
  if (c->out.empty()) {
    ReadHead(c);
    if (c->done) return;
    const size_t end = HttpHeadEnd(c->in);
    if (end != std::string::npos && end <= kMaxHeadBytes) {
      c->out = reply(c->in.substr(0, end));
    } else if (c->in.size() > kMaxHeadBytes) {
      c->out = HttpResponse(431, kTextType, "request head over 8 KiB\n");
    } else {
      return;  // more to come, before the deadline
    }
    c->in.clear();
    c->deadline = Clock::now() + kWriteTimeout;
  }
  SendSome(c);
}

// Closes with a reset instead of a FIN. After a plain close the kernel
// would go on trying to deliver an unread reply to a peer that takes
// nothing, holding the buffers the deadline was meant to free.
void Abort(int fd) {
  const linger now{1, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof(now));
  ::close(fd);
}

// Closes the connections that are done, and aborts those past their
// deadline; the rest keep their accept order.
void CloseFinished(std::vector<Conn>* conns) {
  const Clock::time_point now = Clock::now();
  auto gone = std::stable_partition(
      conns->begin(), conns->end(),
      [now](const Conn& c) { return !c.done && now < c.deadline; });
  for (auto it = gone; it != conns->end(); ++it) {
    if (it->done)
      ::close(it->fd);
    else
      Abort(it->fd);
  }
  conns->erase(gone, conns->end());
}

// Makes room for a new peer by closing the oldest one still sending its
// head: it has had the longest to finish, while a scraper sends its head
// at once, so a scrape gets in past any crowd of idle peers. False when
// every peer is taking its reply (each ends within kWriteTimeout).
bool EvictOldestReader(std::vector<Conn>* conns) {
  auto it = std::find_if(conns->begin(), conns->end(),
                         [](const Conn& c) { return c.out.empty(); });
  if (it == conns->end()) return false;
  ::close(it->fd);
  conns->erase(it);
  return true;
}

// Accepts the peers waiting, at most kMaxConnections a turn so a flood of
// connects cannot starve those already in. False when out of descriptors.
bool AcceptSome(int listen_fd, std::vector<Conn>* conns) {
  for (size_t i = 0; i < kMaxConnections; ++i) {
    const int fd =
        ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0 && (errno == EINTR || errno == ECONNABORTED)) continue;
    if (fd < 0)
      return errno != EMFILE && errno != ENFILE && errno != ENOBUFS &&
             errno != ENOMEM;
    if (conns->size() >= kMaxConnections && !EvictOldestReader(conns)) {
      ::close(fd);
      continue;
    }
    conns->emplace_back(fd, Clock::now() + kHeadTimeout);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  SHEFL_ASSIGN_OR_RETURN(sockaddr_in addr, ParseListen(listen));
  auto s = std::unique_ptr<MetricsServer>(new MetricsServer());
  s->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  s->listen_fd_ =
      ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  const int one = 1;
  if (s->listen_fd_ >= 0)
    ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr* sa = reinterpret_cast<sockaddr*>(&addr);
  // Backlog 128: a burst of connects waits in the kernel, not refused,
  // until the loop takes it.
  if (s->wake_fd_ < 0 || s->listen_fd_ < 0 ||
      ::bind(s->listen_fd_, sa, sizeof(addr)) != 0 ||
      ::listen(s->listen_fd_, 128) != 0)
    return absl::UnavailableError(absl::StrCat("--metrics-listen ", listen,
                                               ": cannot listen: ",
                                               std::strerror(errno)));
  socklen_t len = sizeof(addr);
  ::getsockname(s->listen_fd_, sa, &len);
  s->port_ = ntohs(addr.sin_port);
  {
    MutexLock lock(s->mu_);  // before Serve starts; the analysis asks
    s->handlers_["/metrics"] = Handler{
        kMetricsType, [registry, p = s.get()]() -> absl::StatusOr<std::string> {
          std::string run;
          {
            MutexLock lock(p->mu_);
            run = p->run_id_;
          }
          std::vector<prometheus::MetricFamily> families = registry->Collect();
          AddRunLabel(run, &families);
          std::ostringstream out;
          prometheus::TextSerializer().Serialize(out, families);
          return out.str();
        }};
  }
  s->thread_ = std::thread([p = s.get()] { p->Serve(); });
  return s;
}

MetricsServer::~MetricsServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    // Adding 1 to an eventfd counter that is far from its maximum neither
    // blocks nor fails.
    const ssize_t n = ::write(wake_fd_, &one, sizeof(one));
    (void)n;
    // Bounded: Serve() waits only in poll(), which the write ends; every
    // other step is non-blocking, and each Body is quick (see the header).
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

void MetricsServer::SetHandler(const std::string& path, Body body) {
  MutexLock lock(mu_);
  if (body)
    handlers_[path] = Handler{kTextType, std::move(body)};
  else
    handlers_.erase(path);
}

void MetricsServer::SetRunId(const std::string& id) {
  MutexLock lock(mu_);
  run_id_ = id;
}

void MetricsServer::Serve() {
  std::vector<Conn> conns;  // in accept order: the front is the oldest
  std::vector<pollfd> fds;
  Clock::time_point accept_after = Clock::time_point::min();
  const auto reply = [this](const std::string& head) { return Reply(head); };
  for (;;) {
    const Clock::time_point now = Clock::now();
    const bool accepting = now >= accept_after;
    Clock::time_point wake =
        accepting ? Clock::time_point::max() : accept_after;
    fds.assign({{wake_fd_, POLLIN, 0},
                {listen_fd_, static_cast<short>(accepting ? POLLIN : 0), 0}});
    for (const Conn& c : conns) {
      const short events = c.out.empty() ? POLLIN : POLLOUT;
      fds.push_back({c.fd, events, 0});
      wake = std::min(wake, c.deadline);
    }
    // A failed poll (EINTR) leaves every revents 0: the loop just goes on.
    ::poll(fds.data(), fds.size(), MillisUntil(wake));
    if (fds[0].revents != 0) break;
    for (size_t i = 0; i < conns.size(); ++i)
      if (fds[i + 2].revents != 0) Progress(&conns[i], reply);
    CloseFinished(&conns);
    if ((fds[1].revents & POLLIN) && !AcceptSome(listen_fd_, &conns))
      accept_after = Clock::now() + kAcceptPause;
  }
  for (const Conn& c : conns) ::close(c.fd);
}

std::string MetricsServer::Reply(const std::string& head) {
  const absl::StatusOr<HttpRequestLine> line = ParseHttpRequestLine(head);
  if (!line.ok())
    return HttpResponse(400, kTextType,
                        absl::StrCat(line.status().message(), "\n"));
  if (line->method != "GET")
    return HttpResponse(405, kTextType, "only GET is served\n");
  Handler h;
  {
    MutexLock lock(mu_);
    auto it = handlers_.find(line->path);
    if (it != handlers_.end()) h = it->second;
  }
  // Called outside the lock, so that a body may call SetHandler.
  if (!h.body) return HttpResponse(404, kTextType, "not found: try /metrics\n");
  const absl::StatusOr<std::string> body = h.body();
  if (!body.ok())
    return HttpResponse(503, kTextType,
                        absl::StrCat(body.status().message(), "\n"));
  return HttpResponse(200, h.content_type, *body);
}

}  // namespace shefl
