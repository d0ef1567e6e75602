#include "common/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace shefl {

void LogLine(std::string_view component, std::string_view message) {
  static std::mutex mu;
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm;
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s.%03d [%.*s] %.*s\n", stamp, ms,
               static_cast<int>(component.size()), component.data(),
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

}  // namespace shefl
