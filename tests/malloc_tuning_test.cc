// glibc's malloc thresholds for tensor work (common/core/malloc_tuning.h):
// a user's environment wins, and once tuned a block of a few MiB comes
// from the heap, where glibc's defaults give it a fresh mapping.
#include "common/core/malloc_tuning.h"

#include <malloc.h>
#include <stdlib.h>

#include <cstdlib>
#include <string>

#include <catch2/catch.hpp>

namespace shefl {
namespace {

TEST_CASE("the environment's malloc settings are kept") {
  CHECK_FALSE(UserSetsMalloc(nullptr, nullptr, nullptr));
  CHECK_FALSE(UserSetsMalloc("glibc.pthread.rseq=0", nullptr, nullptr));
  CHECK(UserSetsMalloc("glibc.malloc.trim_threshold=131072", nullptr, nullptr));
  CHECK(UserSetsMalloc("glibc.cpu.x86_ibt=on:glibc.malloc.arena_max=2", nullptr,
                       nullptr));
  CHECK(UserSetsMalloc(nullptr, "131072", nullptr));
  CHECK(UserSetsMalloc(nullptr, nullptr, "0"));

  ::setenv("MALLOC_TRIM_THRESHOLD_", "131072", 1);
  CHECK(TuneMallocForTensors() == "malloc: the environment's settings kept");
  ::unsetenv("MALLOC_TRIM_THRESHOLD_");
}

TEST_CASE("once tuned, a block of a few MiB comes from the heap, not a fresh mapping") {
  const size_t size = size_t{4} << 20;  // a bf16 step's larger buffers
  ::unsetenv("GLIBC_TUNABLES");
  ::unsetenv("MALLOC_MMAP_THRESHOLD_");
  ::unsetenv("MALLOC_TRIM_THRESHOLD_");
  // glibc's default: mapped on its own (mallinfo2's hblks counts those).
  const size_t before = mallinfo2().hblks;
  void* p = std::malloc(size);
  REQUIRE(p != nullptr);
  CHECK(mallinfo2().hblks == before + 1);
  std::free(p);

  const std::string line = TuneMallocForTensors();
  CHECK(line.find("mmap threshold 32 MiB, trim threshold 256 MiB") !=
        std::string::npos);
  const size_t mapped = mallinfo2().hblks;
  void* q = std::malloc(size);
  REQUIRE(q != nullptr);
  CHECK(mallinfo2().hblks == mapped);
  std::free(q);
}

}  // namespace
}  // namespace shefl
