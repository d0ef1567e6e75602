// A std::mutex that clang's thread-safety analysis understands, and its
// scoped locks. libstdc++'s std::mutex and std::lock_guard carry no
// capability attributes, so fields guarded by them cannot be checked;
// these can: annotate a guarded field with ABSL_GUARDED_BY(mu_), a helper
// that expects the lock with ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_), and the
// clang build (tests/thread_safety_test.cc) refuses an unguarded access.
// Waiting on a condition takes std::condition_variable_any with a
// UniqueLock. Same cost and semantics as std::mutex; thread-safe.
// Not absl::Mutex: this keeps the std::mutex and condition-variable waits
// (and their timeouts) the code had, unchanged, and adds only the checks.
#ifndef SHEFL_COMMON_CORE_MUTEX_H_
#define SHEFL_COMMON_CORE_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace shefl {

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    return mu_.try_lock();
  }

 private:
  std::mutex mu_;
};

// Holds `mu` for its scope (std::lock_guard).
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

// Holds `mu` for its scope and lets a condition variable release and
// retake it while it waits (std::unique_lock with
// std::condition_variable_any).
class ABSL_SCOPED_LOCKABLE UniqueLock {
 public:
  explicit UniqueLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_.lock();
  }
  ~UniqueLock() ABSL_UNLOCK_FUNCTION() {
    if (held_) mu_.unlock();
  }
  UniqueLock(const UniqueLock&) = delete;
  UniqueLock& operator=(const UniqueLock&) = delete;

  // BasicLockable, for std::condition_variable_any::wait* (which releases
  // and retakes it out of the analysis' sight) and for code that lets go
  // of the lock for a while: the analysis tracks these.
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.lock();
    held_ = true;
  }
  void unlock() ABSL_UNLOCK_FUNCTION() {
    held_ = false;
    mu_.unlock();
  }

 private:
  Mutex& mu_;
  bool held_ = true;
};

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_MUTEX_H_
