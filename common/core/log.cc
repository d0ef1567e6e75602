#include "common/core/log.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "common/core/mutex.h"

namespace shefl {

void LogLine(std::string_view component, std::string_view message) {
  static Mutex mu;
  using namespace std::chrono;
  const auto now = system_clock::now();
  const std::time_t t = system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm;
  gmtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
  MutexLock lock(mu);
  std::fprintf(stderr, "%s.%03d [%.*s] %.*s\n", stamp, ms,
               static_cast<int>(component.size()), component.data(),
               static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

std::string LogSafe(std::string_view text, size_t max_bytes) {
  std::string out;
  const size_t n = std::min(text.size(), max_bytes);
  out.reserve(n + 3);
  for (size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (text.size() > max_bytes) out += "...";
  return out;
}

}  // namespace shefl
