// This process's memory, for logs, metrics and benchmarks.
#ifndef SHEFL_COMMON_RESOURCES_H_
#define SHEFL_COMMON_RESOURCES_H_

#include <cstdint>

namespace shefl {

uint64_t PeakRssBytes();      // high-water mark (getrusage)
uint64_t ResidentBytes();     // now (/proc/self/statm)

}  // namespace shefl

#endif  // SHEFL_COMMON_RESOURCES_H_
