// shefl-coordinator --config FILE [--set key=value]... [--listen HOST:PORT]
//     [--metrics-listen HOST:PORT] [--out DIR] [--resume RUN_DIR]
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "server/coordinator.h"

namespace {

shefl::Coordinator* g_coordinator = nullptr;

void OnSignal(int) {
  if (g_coordinator) g_coordinator->RequestStop();
}

constexpr const char* kUsage =
    "usage: shefl-coordinator --config FILE [--set key=value]...\n"
    "         [--listen HOST:PORT] [--metrics-listen HOST:PORT] [--out DIR]\n"
    "         [--resume RUN_DIR] [--threads N]\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "shefl-coordinator: %s\n%s", error.c_str(), kUsage);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  shefl::CoordinatorOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (i + 1 >= argc) return Usage(absl::StrCat(flag, " needs a value"));
    const std::string value = argv[++i];
    if (flag == "--config") o.config_path = value;
    else if (flag == "--set") o.overrides.push_back(value);
    else if (flag == "--listen") o.listen = value;
    else if (flag == "--metrics-listen") o.metrics_listen = value;
    else if (flag == "--out") o.out_dir = value;
    else if (flag == "--resume") o.resume_dir = value;
    else if (flag == "--threads") o.threads = std::atoi(value.c_str());
    else return Usage(absl::StrCat("unknown flag ", flag));
  }
  if (o.config_path.empty() && o.resume_dir.empty())
    return Usage("--config or --resume is required");
  auto coordinator = shefl::Coordinator::Create(o);
  if (!coordinator.ok()) {
    std::fprintf(stderr, "shefl-coordinator: %s\n",
                 std::string(coordinator.status().message()).c_str());
    return 1;
  }
  g_coordinator = coordinator->get();
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  absl::Status st = (*coordinator)->Run();
  g_coordinator = nullptr;
  if (!st.ok()) {
    std::fprintf(stderr, "shefl-coordinator: %s\n",
                 std::string(st.message()).c_str());
    return 1;
  }
  return 0;
}
