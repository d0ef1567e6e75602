// glibc's malloc set for a process that trains and evaluates tensors.
//
// A training step allocates and frees buffers of a few hundred KiB to a
// few MiB (activations, gradients, bf16 copies of the weights) every few
// milliseconds. glibc serves blocks above its mmap threshold (128 KiB at
// first, raised as such blocks are freed) with fresh mappings, and gives
// memory back to the kernel once more than the trim threshold is free at
// the top of a heap (the worker threads' arenas are trimmed with madvise).
// Either way the next step writes pages the kernel must fault in and zero
// again. Raising both thresholds keeps the freed blocks in the process for
// reuse: the paper CNN's bf16 step on one thread took 7.4 ms before and
// 4.8 ms after, with LeanSgd (docs/PERFORMANCE.md, section 1b). Peak
// memory is the same (only memory once in use is kept), but the resident
// size falls back less after a peak.
//
// A user's own choice wins: nothing is changed when the environment sets a
// glibc.malloc tunable (GLIBC_TUNABLES) or one of glibc's MALLOC_*_ variables
// for these thresholds. Without glibc this does nothing.
#ifndef SHEFL_COMMON_CORE_MALLOC_TUNING_H_
#define SHEFL_COMMON_CORE_MALLOC_TUNING_H_

#include <string>

namespace shefl {

inline constexpr size_t kMallocMmapThreshold = size_t{32} << 20;  // glibc's cap
inline constexpr size_t kMallocTrimThreshold = size_t{256} << 20;

// Whether an environment (as getenv reads it) already sets glibc's malloc
// thresholds, so TuneMallocForTensors leaves them alone.
bool UserSetsMalloc(const char* glibc_tunables, const char* mmap_threshold,
                    const char* trim_threshold);

// Sets the two thresholds above, once, first thing in main(); returns a
// line for the log saying what it did (or why not).
std::string TuneMallocForTensors();

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_MALLOC_TUNING_H_
