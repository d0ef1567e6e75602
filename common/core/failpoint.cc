#include "common/core/failpoint.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/core/log.h"

namespace shefl {

namespace {

struct Armed {
  std::string name;  // empty: no failpoint armed
  long hit_at = 1;
};

const Armed& ArmedPoint() {
  static const Armed armed = [] {
    Armed a;
    const char* env = std::getenv("SHEFL_FAILPOINT");
    if (env == nullptr || *env == '\0') return a;
    std::string spec(env);
    const size_t at = spec.find('@');
    if (at != std::string::npos) {
      a.hit_at = std::max(1L, std::strtol(spec.c_str() + at + 1, nullptr, 10));
      spec.resize(at);
    }
    a.name = spec;
    bool known = false;
    for (const char* f : kFailpoints) known = known || a.name == f;
    if (!known)  // a typo would otherwise never fire, silently
      LogLine("failpoint", "WARNING: SHEFL_FAILPOINT names no failpoint: '" +
                               a.name + "'");
    return a;
  }();
  return armed;
}

}  // namespace

void Failpoint(const char* name) {
  const Armed& armed = ArmedPoint();
  if (armed.name.empty() || armed.name != name) return;
  static std::atomic<long> hits{0};
  if (++hits < armed.hit_at) return;
  LogLine("failpoint", std::string(name) + ": SIGKILL");
  ::kill(::getpid(), SIGKILL);
  ::_exit(137);  // not reached
}

}  // namespace shefl
