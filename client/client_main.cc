// shefl-client --coordinator HOST:PORT --clients 0-24 [--device auto]
//     [--name NAME] [--out DIR] [--metrics-listen HOST:PORT] [--threads N]
#include <csignal>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/daemon.h"

namespace {

shefl::Daemon* g_daemon = nullptr;
void OnSignal(int) {
  if (g_daemon) g_daemon->RequestStop();
}

constexpr const char* kUsage =
    "usage: shefl-client --coordinator HOST:PORT --clients RANGES\n"
    "         [--device auto|cpu|cuda|cuda:N] [--name NAME] [--out DIR]\n"
    "         [--metrics-listen HOST:PORT] [--threads N]\n"
    "  RANGES: logical client ids, e.g. 0-24 or 0-4,10-14\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "shefl-client: %s\n%s", error.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  shefl::DaemonOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) return Usage(absl::StrCat(flag, " needs a value"));
    const std::string value = argv[++i];
    if (flag == "--coordinator") {
      o.coordinator = value;
    } else if (flag == "--clients") {
      auto ids = shefl::ParseClientRanges(value);
      if (!ids.ok()) return Usage(std::string(ids.status().message()));
      o.clients = *ids;
    } else if (flag == "--device") {
      o.device = value;
    } else if (flag == "--name") {
      o.name = value;
    } else if (flag == "--out") {
      o.out_dir = value;
    } else if (flag == "--metrics-listen") {
      o.metrics_listen = value;
    } else if (flag == "--threads") {
      o.threads = std::atoi(value.c_str());
    } else {
      return Usage(absl::StrCat("unknown flag ", flag));
    }
  }
  auto daemon = shefl::Daemon::Create(o);
  if (!daemon.ok()) {
    std::fprintf(stderr, "shefl-client: %s\n",
                 std::string(daemon.status().message()).c_str());
    return 1;
  }
  g_daemon = daemon->get();
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  absl::Status st = (*daemon)->Run();
  g_daemon = nullptr;
  if (!st.ok()) {
    std::fprintf(stderr, "shefl-client: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}
