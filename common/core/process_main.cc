#include "common/core/process_main.h"

#include <unistd.h>

#include <atomic>

namespace shefl {
namespace {

std::atomic<const StopHook*> g_hook{nullptr};
// A signal handler may only touch lock-free atomics.
static_assert(std::atomic<const StopHook*>::is_always_lock_free);

}  // namespace

void StopOnSignal(int signal) {
  if (const StopHook* hook = g_hook.load())
    hook->stop_(hook->arg_);
  else
    _exit(128 + signal);
}

StopHook::StopHook(void (*stop)(void*), void* arg) : stop_(stop), arg_(arg) {
  g_hook.store(this);
}

StopHook::~StopHook() {
  // Clears only its own entry: a hook made after this one stays.
  const StopHook* self = this;
  g_hook.compare_exchange_strong(self, nullptr);
}

}  // namespace shefl
