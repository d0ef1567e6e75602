#include "cli/live_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "cli/progress.h"
#include "common/net/run_label.h"

namespace shefl {

std::string FormatStatusLine(const StatusFigures& f) {
  if (f.quorum > 0 && f.connected < f.quorum)
    return absl::StrCat("waiting for clients: ", f.connected, "/", f.num_clients,
                        " connected, below the quorum of ", f.quorum);
  if (f.round == 0 && f.uploads_expected == 0)
    return absl::StrCat("waiting for clients: ", f.connected, "/", f.num_clients, " connected");
  std::string line = absl::StrCat("round ", f.round + 1, "/", f.rounds_planned, ": ",
                                  f.uploads_received, "/", f.uploads_expected, " uploads  up ",
                                  FormatMegabytes(f.bytes_up));
  if (f.connected < f.num_clients)
    absl::StrAppend(&line, "  ", f.connected, "/", f.num_clients, " connected");
  if (f.eta_s >= 0) absl::StrAppend(&line, "  ETA ", absl::StrFormat("%.0f", f.eta_s), " s");
  return line;
}

std::map<std::string, double> ParsePrometheusText(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    out[WithoutRunLabel(line.substr(0, space))] =
        std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

std::string FetchLocalMetrics(int port, absl::Duration timeout) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  timeval tv = absl::ToTimeval(timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0) {
    const std::string req = "GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      char buf[16384];
      for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) reply.append(buf, n);
    }
  }
  ::close(fd);
  const size_t body = reply.find("\r\n\r\n");
  if (reply.rfind("HTTP/1.", 0) != 0 || reply.find(" 200 ") == std::string::npos ||
      body == std::string::npos)
    return "";
  return reply.substr(body + 4);
}

LiveStatus::LiveStatus(std::ostream& out, int metrics_port, int64_t num_clients, bool enabled)
    : out_(out), port_(metrics_port), num_clients_(num_clients), enabled_(enabled) {}

namespace {

double Get(const std::map<std::string, double>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

}  // namespace

void LiveStatus::Tick() {
  if (!enabled_) return;
  const absl::Time now = absl::Now();
  if (now - last_scrape_ < absl::Seconds(1)) return;
  last_scrape_ = now;
  const std::string text = FetchLocalMetrics(port_, absl::Milliseconds(300));
  if (text.empty()) return;  // not up yet, or gone: keep the last line
  const auto m = ParsePrometheusText(text);
  StatusFigures f;
  f.round = static_cast<int64_t>(Get(m, "shefl_round"));
  f.rounds_planned = static_cast<int64_t>(Get(m, "shefl_rounds_planned"));
  f.connected = static_cast<int64_t>(Get(m, "shefl_clients_connected"));
  f.num_clients = num_clients_;
  f.quorum = static_cast<int64_t>(Get(m, "shefl_clients_quorum"));
  f.uploads_expected = static_cast<int64_t>(Get(m, "shefl_round_uploads_expected"));
  f.uploads_received = static_cast<int64_t>(Get(m, "shefl_round_uploads_received"));
  for (const auto& [key, value] : m)
    if (key.rfind("shefl_bytes_total{", 0) == 0 &&
        key.find("direction=\"up\"") != std::string::npos)
      f.bytes_up += value;
  // ETA from the rounds this launch saw end (a resumed run's earlier
  // rounds took their time in another process).
  if (first_round_seen_ < 0 && f.round > 0) {
    first_round_seen_ = f.round;
    first_round_time_ = now;
  } else if (first_round_seen_ >= 0 && f.round > first_round_seen_) {
    const double per_round =
        absl::ToDoubleSeconds(now - first_round_time_) / (f.round - first_round_seen_);
    f.eta_s = per_round * static_cast<double>(f.rounds_planned - f.round);
  }
  out_ << "\r\033[K" << FormatStatusLine(f) << std::flush;
  shown_ = true;
}

void LiveStatus::Clear() {
  if (!shown_) return;
  out_ << "\r\033[K" << std::flush;
  shown_ = false;
  last_scrape_ = absl::InfinitePast();  // redraw at the next tick
}

}  // namespace shefl
