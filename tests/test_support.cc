#include "tests/test_support.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

namespace shefl::testing {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base ? base : "/tmp") + "/shefl-test-XXXXXX";
  path_ = ::mkdtemp(tmpl.data());
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<nlohmann::json> ReadJsonl(const std::string& path) {
  // Only complete lines: a writer may be midway through the last one.
  const std::string text = ReadFile(path);
  std::vector<nlohmann::json> out;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos;
       start = end + 1)
    if (end > start)
      out.push_back(nlohmann::json::parse(text.substr(start, end - start)));
  return out;
}

ProcessResult RunProcess(const std::vector<std::string>& argv,
                         double timeout_s) {
  TempDir dir;
  ProcessResult r;
  r.exit_code = WaitFor(Spawn(argv, dir / "output.log"), timeout_s);
  r.output = ReadFile(dir / "output.log");
  return r;
}

std::string BinDir() { return std::string(SHEFL_BINARY_DIR) + "/bin"; }

nlohmann::json WaitForEndpoints(const std::string& run_dir, size_t daemons,
                                double timeout_s) {
  nlohmann::json ep;
  const bool ok = WaitUntil(
      [&] {
        ep = nlohmann::json::parse(ReadFile(run_dir + "/endpoints.json"),
                                   nullptr, /*allow_exceptions=*/false);
        return ep.is_object() && ep.contains("coordinator_pid") &&
               ep["daemons"].size() == daemons;
      },
      timeout_s);
  return ok ? ep : nlohmann::json(nlohmann::json::value_t::discarded);
}

bool WaitUntil(const std::function<bool()>& condition, double timeout_s) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration<double>(timeout_s);
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::map<std::string, double> ParseMetrics(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    // Without the run label every series carries (one endpoint, one run).
    std::string series = line.substr(0, space);
    static const std::regex only(R"(\{run="[^"]*"\})"), first(R"(\{run="[^"]*",)");
    series = std::regex_replace(series, only, "");
    series = std::regex_replace(series, first, "{");
    out[series] = std::strtod(line.c_str() + space + 1, nullptr);
  }
  return out;
}

int ResumedAfter(const std::string& log) {
  const std::string mark = " after round ";
  const size_t at = log.find("resuming ");
  if (at == std::string::npos) return -1;
  const size_t k = log.find(mark, at);
  if (k == std::string::npos) return -1;
  return std::atoi(log.c_str() + k + mark.size());
}

int Occurrences(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

std::string SyntheticConfig(const std::string& extra) {
  return R"(name: synthetic-test
method: shefl
seed: 7
rounds: 3
round_deadline_s: 60
data:
  dataset: synthetic
  synthetic_train: 1200
  synthetic_test: 300
  synthetic_features: 16
  synthetic_classes: 4
partition:
  scheme: dirichlet
  alpha: 1.0
model:
  name: mlp
  num_models: 3
clients:
  num_clients: 8
  num_hpc: 4
  per_round_hpc: 2
  per_round_lpc: 3
train:
  lr: 0.05
  local_epochs: 1
  batch_size: 32
compression:
  density: 0.1
)" + extra;
}

}  // namespace shefl::testing

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>

namespace shefl::testing {

int Spawn(const std::vector<std::string>& argv, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
    FILE* f = std::fopen(log.c_str(), "w");
    ::dup2(fileno(f), 1);
    ::dup2(fileno(f), 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

int WaitFor(int pid, double timeout_s) {
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration<double>(timeout_s);
  int status = 0;
  while (std::chrono::steady_clock::now() < until) {
    if (::waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

namespace {

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int ListenOn(int port, int* bound_port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback(port);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  ::listen(fd, 64);
  socklen_t len = sizeof(a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *bound_port = ntohs(a.sin_port);
  return fd;
}

int ConnectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int FreePort() {
  int port = 0;
  ::close(ListenOn(0, &port));
  return port;
}

std::string HttpGet(int port, const std::string& path, int* status) {
  if (status) *status = 0;
  int fd = ConnectTo(port);
  if (fd < 0) return "";
  const timeval limit{10, 0};  // a server that never answers fails the call
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
  const std::string req = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) resp.append(buf, n);
  ::close(fd);
  const size_t body = resp.find("\r\n\r\n");
  if (body == std::string::npos) return "";
  if (status && resp.rfind("HTTP/1.", 0) == 0 && resp.size() > 12)
    *status = std::atoi(resp.c_str() + 9);
  return resp.substr(body + 4);
}

CountingRelay::CountingRelay(int target_port) : target_(target_port) {
  listen_fd_ = ListenOn(0, &port_);
  threads_.emplace_back([this] { Accept(); });
}

CountingRelay::~CountingRelay() {
  stop_ = true;
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  ::close(listen_fd_);
}

void CountingRelay::Accept() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    int server = ConnectTo(target_);
    if (server < 0) {
      ::close(client);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    threads_.emplace_back([this, client, server] { Pump(client, server, &up_); });
    threads_.emplace_back([this, client, server] { Pump(server, client, &down_); });
  }
}

void CountingRelay::Pump(int from, int to, std::atomic<uint64_t>* count) {
  char buf[65536];
  while (!stop_) {
    pollfd p{from, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(from, buf, sizeof(buf));
    if (n <= 0) break;
    ssize_t sent = 0;
    while (sent < n) {
      const ssize_t w = ::send(to, buf + sent, n - sent, MSG_NOSIGNAL);
      if (w <= 0) break;
      sent += w;
    }
    *count += static_cast<uint64_t>(n);
  }
  ::shutdown(to, SHUT_WR);  // pass the half-close on
}

}  // namespace shefl::testing
