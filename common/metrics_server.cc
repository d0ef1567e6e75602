#include "common/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace shefl {

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const std::string& listen, std::shared_ptr<prometheus::Registry> registry) {
  if (listen.empty()) return std::unique_ptr<MetricsServer>();
  const size_t colon = listen.rfind(':');
  int port = -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  const std::string host = colon == std::string::npos ? "" : listen.substr(0, colon);
  if (colon == std::string::npos ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port < 0 ||
      port > 65535 ||
      inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(),
                &addr.sin_addr) != 1)
    return absl::InvalidArgumentError(absl::StrCat(
        "--metrics-listen '", listen, "': expected IPv4-HOST:PORT"));
  addr.sin_port = htons(static_cast<uint16_t>(port));
  auto s = std::unique_ptr<MetricsServer>(new MetricsServer());
  s->registry_ = std::move(registry);
  s->fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  ::setsockopt(s->fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s->fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(s->fd_, 16) != 0)
    return absl::UnavailableError(absl::StrCat(
        "--metrics-listen ", listen, ": cannot listen: ", std::strerror(errno)));
  socklen_t len = sizeof(addr);
  ::getsockname(s->fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  s->port_ = ntohs(addr.sin_port);
  s->thread_ = std::thread([p = s.get()] { p->Serve(); });
  return s;
}

MetricsServer::~MetricsServer() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (fd_ >= 0) ::close(fd_);
}

void MetricsServer::Serve() {
  while (!stop_) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 200) <= 0) continue;
    const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (conn < 0) continue;
    Answer(conn);
    ::close(conn);
  }
}

void MetricsServer::Answer(int conn) {
  // Read the request head (bounded in size and time); only its first line
  // matters.
  std::string req;
  char buf[2048];
  while (req.find("\r\n\r\n") == std::string::npos && req.size() < 16384) {
    pollfd p{conn, POLLIN, 0};
    if (::poll(&p, 1, 2000) <= 0) return;
    const ssize_t n = ::read(conn, buf, sizeof(buf));
    if (n <= 0) return;
    req.append(buf, n);
  }
  const bool metrics = req.rfind("GET /metrics ", 0) == 0 ||
                       req.rfind("GET /metrics?", 0) == 0;
  std::string body = "not found: try /metrics\n";
  if (metrics) {
    std::ostringstream out;
    prometheus::TextSerializer().Serialize(out, registry_->Collect());
    body = out.str();
  }
  const std::string head = absl::StrCat(
      "HTTP/1.0 ", metrics ? "200 OK" : "404 Not Found",
      "\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"
      "\r\nContent-Length: ", body.size(), "\r\nConnection: close\r\n\r\n");
  const std::string reply = head + body;
  size_t sent = 0;
  while (sent < reply.size()) {
    const ssize_t n = ::send(conn, reply.data() + sent, reply.size() - sent,
                             MSG_NOSIGNAL);
    if (n <= 0) return;
    sent += static_cast<size_t>(n);
  }
}

}  // namespace shefl
