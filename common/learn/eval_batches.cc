#include "common/learn/eval_batches.h"

#include <ATen/ThreadLocalState.h>
#include <ATen/autocast_mode.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <exception>
#include <mutex>
#include <thread>

namespace shefl {
namespace {

// Lowers this thread's priority only (Linux: a thread id names one thread
// to setpriority). Best effort: evaluation is correct at any priority.
void LowerThisThread(int nice) {
  if (nice <= 0) return;
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (errno != 0) return;
  setpriority(PRIO_PROCESS, tid, std::min(19, now + nice));
}

}  // namespace

void ForBatchesInOrder(
    int64_t n, const EvalThreads& par,
    const std::function<std::vector<at::Tensor>(int64_t)>& compute,
    const std::function<void(std::vector<at::Tensor>&)>& consume) {
  const int workers =
      static_cast<int>(std::min<int64_t>(std::max(1, par.threads), n));
  if (workers <= 1) {
    for (int64_t b = 0; b < n; ++b) {
      std::vector<at::Tensor> r = compute(b);
      consume(r);
    }
    return;
  }
  // Grad mode and autocast's dispatch keys live in thread-local state;
  // autocast's CPU dtype is a plain thread-local of its own.
  const at::ThreadLocalState state;
  const at::ScalarType cpu_dtype = at::autocast::get_autocast_cpu_dtype();
  std::vector<std::vector<at::Tensor>> results(n);
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&](int w) {
    at::ThreadLocalStateGuard guard(state);
    at::autocast::set_autocast_cpu_dtype(cpu_dtype);
    LowerThisThread(par.nice);
    // A helper polls: it is not worth a condition variable beside batches
    // of tens of milliseconds.
    while (w > 0 && par.all_in != nullptr && !par.all_in->load() &&
           next.load() < n && !failed)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    try {
      for (int64_t b = next++; b < n && !failed; b = next++)
        results[b] = compute(b);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      failed = true;
    }
  };
  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) pool.emplace_back(work, w);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  for (int64_t b = 0; b < n; ++b) consume(results[b]);
}

}  // namespace shefl
