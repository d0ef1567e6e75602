// This process's memory and cores, for logs, metrics, benchmarks and
// sizing thread pools.
#ifndef SHEFL_COMMON_CORE_RESOURCES_H_
#define SHEFL_COMMON_CORE_RESOURCES_H_

#include <cstdint>

namespace shefl {

uint64_t PeakRssBytes();      // high-water mark (getrusage)
uint64_t ResidentBytes();     // now (/proc/self/statm)
// The CPUs this process may run on: its affinity mask, not the machine's
// core count (in a container or under taskset only these are ours).
int UsableCores();
// Raises this process's open-file limit (RLIMIT_NOFILE) to its hard limit:
// a server facing many peers needs descriptors for their connections and
// still its own files. Returns the soft limit now in force.
uint64_t RaiseFileLimit();

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_RESOURCES_H_
