#include "common/core/fd_reserve.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "common/core/mutex.h"

namespace shefl {

namespace {

struct Reserve {
  Mutex mu;
  std::vector<int> fds ABSL_GUARDED_BY(mu);
  int wanted ABSL_GUARDED_BY(mu) = 0;
};

Reserve& TheReserve() {
  static Reserve* r = new Reserve();  // never destroyed: used until exit
  return *r;
}

void FillLocked(Reserve& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu) {
  while (static_cast<int>(r.fds.size()) < r.wanted) {
    const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    r.fds.push_back(fd);
  }
}

}  // namespace

int HoldFileReserve(int n) {
  Reserve& r = TheReserve();
  MutexLock lock(r.mu);
  r.wanted = n;
  FillLocked(r);
  return static_cast<int>(r.fds.size());
}

int OpenWithReserve(const char* path, int flags, mode_t mode) {
  int fd = ::open(path, flags, mode);
  Reserve& r = TheReserve();
  if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
    {
      MutexLock lock(r.mu);
      for (int held : r.fds) ::close(held);
      r.fds.clear();
    }
    fd = ::open(path, flags, mode);
    return fd;  // the reserve is taken back by a later open
  }
  if (fd >= 0) {
    const int saved = errno;
    MutexLock lock(r.mu);
    if (static_cast<int>(r.fds.size()) < r.wanted) FillLocked(r);
    errno = saved;
  }
  return fd;
}

int FileReserveHeld() {
  Reserve& r = TheReserve();
  MutexLock lock(r.mu);
  return static_cast<int>(r.fds.size());
}

}  // namespace shefl
