// A stand-in for shefl-coordinator and shefl-client (chosen by the name it
// is invoked under) that plays only what the launcher relies on: listening,
// rounds.jsonl/summary.json, and exiting when the run is over. Behaviour
// knobs come from the environment so a test can make either side fail.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

std::map<std::string, std::string> Flags(int argc, char** argv) {
  std::map<std::string, std::string> flags;
  for (int i = 1; i + 1 < argc; i += 2) flags[argv[i]] = argv[i + 1];
  return flags;
}

int Port(const std::string& host_port) {
  return std::atoi(host_port.substr(host_port.rfind(':') + 1).c_str());
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

sockaddr_in Loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  return a;
}

// Accepts whatever is pending, keeping the connections open until exit.
void AcceptPending(int listener, std::vector<int>& conns) {
  for (int fd; (fd = accept(listener, nullptr, nullptr)) >= 0;) conns.push_back(fd);
}

int Coordinator(const std::map<std::string, std::string>& f) {
  if (int code = EnvInt("FAKE_COORDINATOR_EXIT", 0)) {
    std::cout << "fake coordinator: loading\nfake coordinator: boom\n";
    return code;
  }
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Loopback(Port(f.at("--listen")));
  if (bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 4;
  listen(listener, 64);
  fcntl(listener, F_SETFL, O_NONBLOCK);
  std::vector<int> conns;
  std::string out = f.at("--out");
  std::ofstream(out + "/config.yaml") << "name: fake\n";
  int rounds = EnvInt("FAKE_ROUNDS", 2);
  std::ofstream jsonl(out + "/rounds.jsonl", std::ios::app);
  for (int r = 1; r <= rounds; ++r) {
    Sleep(300);
    AcceptPending(listener, conns);
    std::string line = nlohmann::json{
        {"round", r}, {"wall_seconds", 0.3}, {"ensemble_accuracy", 0.5 + 0.1 * r},
        {"ensemble_loss", 1.0 / r}, {"bytes_up", 1000000 * r},
        {"bytes_down", 2000000}}.dump();
    // Half a line first: the launcher must wait for the rest.
    jsonl << line.substr(0, 10) << std::flush;
    Sleep(300);
    jsonl << line.substr(10) << "\n" << std::flush;
  }
  nlohmann::json summary = {{"rounds", rounds}, {"final_accuracy", 0.7},
                            {"best_accuracy", 0.7}, {"threshold", 0.6},
                            {"rounds_to_threshold", 2}, {"total_bytes_up", 3000000},
                            {"total_bytes_down", 4000000}, {"wall_seconds", 1.2}};
  std::ofstream(out + "/summary.json") << summary.dump() << "\n";
  std::cout << "fake coordinator: done after " << conns.size() << " connections\n";
  return 0;  // exiting closes every connection: the daemons' signal to stop
}

int Client(const std::map<std::string, std::string>& f) {
  std::cout << "fake client " << f.at("--name") << " clients " << f.at("--clients")
            << " threads " << f.at("--threads") << std::endl;
  if (int code = EnvInt("FAKE_CLIENT_EXIT", 0)) {
    Sleep(200);
    std::cout << "fake client: giving up" << std::endl;
    return code;
  }
  // FAKE_CLIENT_EXIT_ONCE=DIR: the first start of each daemon dies (a
  // marker in DIR remembers it), its restart runs normally.
  if (const char* dir = std::getenv("FAKE_CLIENT_EXIT_ONCE")) {
    const std::string marker = std::string(dir) + "/" + f.at("--name") + ".died";
    if (access(marker.c_str(), F_OK) != 0) {
      std::ofstream(marker) << "1\n";
      std::cout << "fake client: dying once" << std::endl;
      return 9;
    }
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a = Loopback(Port(f.at("--coordinator")));
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return 5;
  char buf[64];
  while (read(fd, buf, sizeof(buf)) > 0) {
  }
  std::cout << "fake client: run over" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string self = argv[0];
  std::map<std::string, std::string> flags = Flags(argc, argv);
  if (self.find("shefl-coordinator") != std::string::npos) return Coordinator(flags);
  return Client(flags);
}
