// Descriptors held in reserve so that a server whose peers have taken
// every other one can still write its own files (rounds.jsonl, the
// checkpoint, summary.json). The reserve is a few descriptors on
// /dev/null taken at start; an open that fails for want of descriptors
// gives the reserve up and tries again, and the next open that succeeds
// takes it back when it can.
// Thread-safe.
#ifndef SHEFL_COMMON_CORE_FD_RESERVE_H_
#define SHEFL_COMMON_CORE_FD_RESERVE_H_

#include <sys/types.h>

namespace shefl {

// Holds `n` descriptors in reserve (again after a release); returns how
// many are held.
int HoldFileReserve(int n = 16);

// open(2), with the reserve given up and one more try when the process
// (EMFILE) or the system (ENFILE) is out of descriptors. errno as open's.
int OpenWithReserve(const char* path, int flags, mode_t mode = 0);

// Descriptors in reserve now (for tests).
int FileReserveHeld();

}  // namespace shefl

#endif  // SHEFL_COMMON_CORE_FD_RESERVE_H_
