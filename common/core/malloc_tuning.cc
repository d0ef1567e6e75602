#include "common/core/malloc_tuning.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "absl/strings/str_cat.h"

namespace shefl {

bool UserSetsMalloc(const char* glibc_tunables, const char* mmap_threshold,
                    const char* trim_threshold) {
  if (glibc_tunables != nullptr &&
      std::strstr(glibc_tunables, "glibc.malloc.") != nullptr) {
    return true;
  }
  return mmap_threshold != nullptr || trim_threshold != nullptr;
}

std::string TuneMallocForTensors() {
#if defined(__GLIBC__)
  if (UserSetsMalloc(std::getenv("GLIBC_TUNABLES"),
                     std::getenv("MALLOC_MMAP_THRESHOLD_"),
                     std::getenv("MALLOC_TRIM_THRESHOLD_"))) {
    return "malloc: the environment's settings kept";
  }
  // mallopt returns 1 on success; fixing the mmap threshold also stops
  // glibc from moving it.
  const bool ok =
      mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMallocMmapThreshold)) == 1 &&
      mallopt(M_TRIM_THRESHOLD, static_cast<int>(kMallocTrimThreshold)) == 1;
  if (!ok) return "malloc: glibc refused the thresholds; its defaults kept";
  return absl::StrCat("malloc: mmap threshold ", kMallocMmapThreshold >> 20,
                      " MiB, trim threshold ", kMallocTrimThreshold >> 20,
                      " MiB (GLIBC_TUNABLES overrides)");
#else
  return "malloc: not glibc, left as it is";
#endif
}

}  // namespace shefl
